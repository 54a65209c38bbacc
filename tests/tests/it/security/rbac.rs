//! RBAC end to end with kubectl 1.35 and token-file users: Roles and RoleBindings to users and
//! groups, resource names, subresources, a ClusterRole through a ClusterRoleBinding, and
//! escalation refused, allowing and denying as Kubernetes does.

use strategy_host_e2e::secure::Credential;

use super::with_token_file;

#[test]
fn rbac_roles_and_bindings_allow_and_deny_as_kubernetes() {
    let (f, _files) = with_token_file(&[]);
    let (admin, alice, bob) = (
        Credential::Admin,
        Credential::token("alice-token"),
        Credential::token("bob-token"),
    );
    let whoami = f.ok(&alice, &["auth", "whoami"]);
    assert!(
        whoami.contains("alice")
            && whoami.contains("dev")
            && whoami.contains("system:authenticated"),
        "{whoami}"
    );
    f.ok(&admin, &["create", "namespace", "team"]);
    f.ok(
        &admin,
        &[
            "create",
            "configmap",
            "settings",
            "-n",
            "team",
            "--from-literal=a=b",
        ],
    );
    f.ok(
        &admin,
        &[
            "create",
            "secret",
            "generic",
            "db",
            "-n",
            "team",
            "--from-literal=p=q",
        ],
    );
    f.ok(
        &admin,
        &[
            "create",
            "secret",
            "generic",
            "other",
            "-n",
            "team",
            "--from-literal=p=q",
        ],
    );

    let denied = f.fails(&alice, &["get", "configmaps", "-n", "team"]);
    assert!(
        denied.contains(r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "team""#),
        "{denied}"
    );
    assert_eq!(
        f.kubectl(
            &alice,
            &["auth", "can-i", "list", "configmaps", "-n", "team"]
        )
        .1
        .trim(),
        "no"
    );

    // A namespaced Role bound to a group alice is in.
    f.ok(
        &admin,
        &[
            "create",
            "role",
            "cm-reader",
            "--verb=get,list,watch",
            "--resource=configmaps",
            "-n",
            "team",
        ],
    );
    f.ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "dev-cm",
            "--role=cm-reader",
            "--group=dev",
            "-n",
            "team",
        ],
    );
    f.eventually("alice may list configmaps in team", || {
        f.kubectl(&alice, &["get", "configmaps", "-n", "team"]).0
    });
    assert_eq!(
        f.ok(
            &alice,
            &["auth", "can-i", "list", "configmaps", "-n", "team"]
        )
        .trim(),
        "yes"
    );
    assert_eq!(
        f.kubectl(
            &alice,
            &["auth", "can-i", "list", "configmaps", "-n", "default"]
        )
        .1
        .trim(),
        "no"
    );
    assert!(f
        .fails(&alice, &["get", "configmaps", "-n", "default"])
        .contains("forbidden"));
    assert!(f
        .fails(&alice, &["delete", "configmap", "settings", "-n", "team"])
        .contains("cannot delete resource"));
    let rules = f.ok(&alice, &["auth", "can-i", "--list", "-n", "team"]);
    assert!(
        rules.contains("configmaps") && rules.contains("[get list watch]"),
        "{rules}"
    );

    // Resource names: one secret, not the other.
    f.ok(
        &admin,
        &[
            "create",
            "role",
            "db-secret",
            "--verb=get",
            "--resource=secrets",
            "--resource-name=db",
            "-n",
            "team",
        ],
    );
    f.ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "alice-db",
            "--role=db-secret",
            "--user=alice",
            "-n",
            "team",
        ],
    );
    f.eventually("alice may read secret db", || {
        f.kubectl(&alice, &["get", "secret", "db", "-n", "team"]).0
    });
    let other = f.fails(&alice, &["get", "secret", "other", "-n", "team"]);
    assert!(
        other.contains(
            r#"secrets "other" is forbidden: User "alice" cannot get resource "secrets""#
        ),
        "{other}"
    );
    assert!(f
        .fails(&alice, &["get", "secrets", "-n", "team"])
        .contains("cannot list resource \"secrets\""));

    // Subresources are separate: the token subresource needs its own rule.
    f.ok(&admin, &["create", "serviceaccount", "robot", "-n", "team"]);
    f.ok(
        &admin,
        &[
            "create",
            "role",
            "sa-reader",
            "--verb=get",
            "--resource=serviceaccounts",
            "-n",
            "team",
        ],
    );
    f.ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "alice-sa",
            "--role=sa-reader",
            "--user=alice",
            "-n",
            "team",
        ],
    );
    f.eventually("alice may read service accounts", || {
        f.kubectl(&alice, &["get", "serviceaccount", "robot", "-n", "team"])
            .0
    });
    let token_denied = f.fails(&alice, &["create", "token", "robot", "-n", "team"]);
    assert!(
        token_denied.contains(r#"cannot create resource "serviceaccounts/token""#),
        "{token_denied}"
    );
    f.ok(
        &admin,
        &[
            "create",
            "role",
            "sa-token",
            "--verb=create",
            "--resource=serviceaccounts/token",
            "-n",
            "team",
        ],
    );
    f.ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "alice-token",
            "--role=sa-token",
            "--user=alice",
            "-n",
            "team",
        ],
    );
    f.eventually("alice may mint robot's tokens", || {
        f.kubectl(&alice, &["create", "token", "robot", "-n", "team"])
            .0
    });

    // A ClusterRole through a ClusterRoleBinding: view everywhere, write nowhere, no secrets.
    f.ok(
        &admin,
        &[
            "create",
            "clusterrolebinding",
            "bob-view",
            "--clusterrole=view",
            "--user=bob",
        ],
    );
    f.eventually("bob may view configmaps everywhere", || {
        f.kubectl(&bob, &["get", "configmaps", "-A"]).0
    });
    assert!(f
        .fails(&bob, &["get", "secrets", "-n", "team"])
        .contains("forbidden"));
    assert!(f
        .fails(&bob, &["create", "configmap", "x", "-n", "team"])
        .contains("forbidden"));

    // Escalation: alice may create roles in team, but only with permissions she holds.
    f.ok(
        &admin,
        &[
            "create",
            "role",
            "role-maker",
            "--verb=create,get",
            "--resource=roles.rbac.authorization.k8s.io",
            "-n",
            "team",
        ],
    );
    f.ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "alice-roles",
            "--role=role-maker",
            "--user=alice",
            "-n",
            "team",
        ],
    );
    f.eventually("alice may create roles", || {
        f.kubectl(&alice, &["auth", "can-i", "create", "roles", "-n", "team"])
            .1
            .trim()
            == "yes"
    });
    let grab = f.fails(
        &alice,
        &[
            "create",
            "role",
            "grab",
            "--verb=get,list",
            "--resource=secrets",
            "-n",
            "team",
        ],
    );
    assert!(
        grab.contains("is attempting to grant RBAC permissions not currently held"),
        "{grab}"
    );
    assert!(
        grab.contains(r#"roles.rbac.authorization.k8s.io "grab" is forbidden"#),
        "{grab}"
    );
    f.ok(
        &alice,
        &[
            "create",
            "role",
            "cm-copy",
            "--verb=get,list",
            "--resource=configmaps",
            "-n",
            "team",
        ],
    );
    // Nothing of the refused role was stored.
    assert!(f
        .fails(&admin, &["get", "role", "grab", "-n", "team"])
        .contains("NotFound"));
}

/// A Role granting get, list and watch on one named object allows a list and a watch whose
/// field selector requires that name (as the bootstrap `extension-apiserver-authentication-reader`
/// is used by every extension server built on k8s.io/apiserver), and nothing wider.
#[test]
fn a_field_selector_on_the_name_lists_and_watches_what_resource_names_grant() {
    let (f, _files) = with_token_file(&[]);
    let (admin, alice) = (Credential::Admin, Credential::token("alice-token"));
    f.ok(&admin, &["create", "namespace", "team"]);
    for name in ["settings", "other"] {
        f.ok(&admin, &["create", "configmap", name, "-n", "team"]);
    }
    f.ok(
        &admin,
        &[
            "create",
            "role",
            "settings-reader",
            "--verb=get,list,watch",
            "--resource=configmaps",
            "--resource-name=settings",
            "-n",
            "team",
        ],
    );
    f.ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "alice-settings",
            "--role=settings-reader",
            "--user=alice",
            "-n",
            "team",
        ],
    );
    let list = |selector: &str| {
        let path = format!("/api/v1/namespaces/team/configmaps?fieldSelector={selector}");
        f.call(&alice, "GET", &path, None).unwrap()
    };
    f.eventually("alice may list configmap settings by name", || {
        list("metadata.name%3Dsettings").code == 200
    });
    let listed = list("metadata.name%3D%3Dsettings").json();
    assert_eq!(
        listed["items"][0]["metadata"]["name"], "settings",
        "{listed}"
    );
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    let watch = f
        .call(
            &alice,
            "GET",
            "/api/v1/namespaces/team/configmaps?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dsettings",
            None,
        )
        .unwrap();
    assert_eq!(watch.code, 200, "{}", watch.body);
    assert!(
        watch.body.contains(r#""name":"settings""#),
        "{}",
        watch.body
    );
    // Another name, no name, or a name only excluded: the list is not about `settings`.
    for selector in ["metadata.name%3Dother", "", "metadata.name!%3Dother"] {
        let refused = list(selector);
        assert_eq!(refused.code, 403, "{selector}: {}", refused.body);
    }
    let (ok, _, err) = f.kubectl(
        &alice,
        &[
            "get",
            "configmaps",
            "-n",
            "team",
            "--field-selector",
            "metadata.name=settings",
        ],
    );
    assert!(ok, "kubectl list by name: {err}");
}
