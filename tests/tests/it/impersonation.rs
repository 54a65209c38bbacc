//! Impersonation as kubectl 1.35 uses it (`--as`, `--as-group`): allowed only where RBAC grants
//! the `impersonate` verb on the user, group or ServiceAccount named, refused with Kubernetes'
//! 403 otherwise; the request then acts, and is authorized, as the impersonated user; the
//! audit log records both users.

use serde_json::Value;
use strategy_host_e2e::secure::{Credential, SecureFixture};

const TOKENS: &str = "alice-token,alice,uid-alice\nbob-token,bob,uid-bob\n";

#[test]
fn kubectl_as_acts_as_the_impersonated_user_where_rbac_allows_it() {
    let logs = tempfile::tempdir().unwrap();
    let audit_log = logs.path().join("audit.log");
    let audit_path = audit_log.display().to_string();
    let (f, _files) = SecureFixture::start_with_tokens(TOKENS, &["--audit-log-path", &audit_path]);
    let admin = Credential::Admin;
    let alice = Credential::token("alice-token");
    f.ok(&admin, &["create", "namespace", "team"]);
    f.ok(&admin, &["create", "serviceaccount", "robot", "-n", "team"]);

    // Lists the team's ConfigMaps as alice impersonating `who` (kubectl's flags), which must
    // fail; kubectl's error.
    let list_config_maps_as = |who: &[&str]| {
        let mut args = who.to_vec();
        args.extend(["get", "--raw", "/api/v1/namespaces/team/configmaps"]);
        f.fails(&alice, &args)
    };

    // Not granted: Kubernetes' refusal, naming what may not be impersonated (read raw: kubectl
    // words a refused discovery request "Forbidden: unknown", against kube-apiserver too).
    let refused = list_config_maps_as(&["--as", "bob"]);
    assert!(
        refused.contains(r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#),
        "{refused}"
    );

    // Granted for bob and the group dev only.
    f.ok(
        &admin,
        &[
            "create",
            "clusterrole",
            "impersonate-bob",
            "--verb=impersonate",
            "--resource=users,groups",
            "--resource-name=bob",
            "--resource-name=dev",
        ],
    );
    f.ok(
        &admin,
        &[
            "create",
            "clusterrolebinding",
            "alice-impersonates",
            "--clusterrole=impersonate-bob",
            "--user=alice",
        ],
    );
    f.eventually("alice may impersonate bob", || {
        f.kubectl(&alice, &["--as", "bob", "auth", "whoami", "-o", "json"])
            .0
    });
    let whoami: Value = serde_json::from_str(&f.ok(
        &alice,
        &[
            "--as",
            "bob",
            "--as-group",
            "dev",
            "auth",
            "whoami",
            "-o",
            "json",
        ],
    ))
    .unwrap();
    assert_eq!(whoami["status"]["userInfo"]["username"], "bob", "{whoami}");
    assert_eq!(
        whoami["status"]["userInfo"]["groups"],
        serde_json::json!(["dev", "system:authenticated"]),
        "{whoami}"
    );
    // The request is authorized as bob, who may not list ConfigMaps.
    let as_bob = list_config_maps_as(&["--as", "bob"]);
    assert!(
        as_bob.contains(r#"User "bob" cannot list resource "configmaps""#),
        "{as_bob}"
    );
    // Another user, or another group, stays refused.
    let carol = list_config_maps_as(&["--as", "carol"]);
    assert!(carol.contains(r#"users "carol" is forbidden"#), "{carol}");
    let ops = list_config_maps_as(&["--as", "bob", "--as-group", "ops"]);
    assert!(
        ops.contains(
            r#"groups "ops" is forbidden: User "alice" cannot impersonate resource "groups""#
        ),
        "{ops}"
    );

    // The edit role lets its holder impersonate the namespace's ServiceAccounts, as in Kubernetes.
    f.ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "alice-edits",
            "--clusterrole=edit",
            "--user=alice",
            "-n",
            "team",
        ],
    );
    f.eventually("alice may impersonate the team's ServiceAccounts", || {
        f.kubectl(
            &alice,
            &["--as", "system:serviceaccount:team:robot", "auth", "whoami"],
        )
        .0
    });
    let robot: Value = serde_json::from_str(&f.ok(
        &alice,
        &[
            "--as",
            "system:serviceaccount:team:robot",
            "auth",
            "whoami",
            "-o",
            "json",
        ],
    ))
    .unwrap();
    assert_eq!(
        robot["status"]["userInfo"]["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:team",
            "system:authenticated"
        ]),
        "{robot}"
    );

    // The audit log names who asked and whom they acted as.
    f.eventually("the audit log records the impersonation", || {
        std::fs::read_to_string(&audit_log)
            .unwrap_or_default()
            .lines()
            .any(|line| {
                let event: Value = serde_json::from_str(line).unwrap_or_default();
                event["user"]["username"] == "alice"
                    && event["impersonatedUser"]["username"] == "bob"
                    && event["impersonatedUser"]["groups"]
                        == serde_json::json!(["dev", "system:authenticated"])
            })
    });
}
