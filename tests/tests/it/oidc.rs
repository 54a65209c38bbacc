//! Logging in with an identity provider (`--authentication-config`): a real OpenID Connect
//! issuer over HTTPS (tests/python/oidc_issuer.py: discovery, key set, tokens signed by PyJWT),
//! kubectl 1.35 with `--token`; the mapped user and groups, RBAC by mapped group; wrong
//! audience, expired, forged and rule-failing tokens answered 401; a second issuer added to the
//! file without a restart; a broken file keeping the last good one; the other authenticators
//! unaffected.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use strategy_host_e2e::pyjwt::{self, Served};
use strategy_host_e2e::secure::{Credential, SecureFixture};

/// The issuer, serving until dropped.
struct Issuer {
    served: Served,
    url: String,
}

impl Issuer {
    fn start() -> Self {
        let served = Served::start("oidc_issuer.py", &["serve"]);
        let url = format!("https://127.0.0.1:{}", served.port());
        Self { served, url }
    }

    fn ca(&self) -> String {
        std::fs::read_to_string(self.served.file("ca.pem")).unwrap()
    }

    /// A token with `claims` (iss, aud and times filled in unless given).
    fn token(&self, claims: Value, other_key: bool) -> Credential {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut full = json!({"iss": self.url, "aud": "kubernetes", "iat": now, "exp": now + 600});
        for (k, v) in claims.as_object().unwrap() {
            full[k] = v.clone();
        }
        let mut cmd = pyjwt::command("oidc_issuer.py");
        cmd.arg("sign").arg(self.served.dir()).arg(full.to_string());
        if other_key {
            cmd.arg("--other-key");
        }
        let out = cmd.output().expect("sign a token");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Credential::token(String::from_utf8(out.stdout).unwrap().trim())
    }

    /// This issuer's entry of an AuthenticationConfiguration.
    fn entry(&self, prefix: &str) -> Value {
        json!({
            "issuer": {"url": self.url, "audiences": ["kubernetes"], "certificateAuthority": self.ca()},
            "claimValidationRules": [{"claim": "hd", "requiredValue": "example.com"}],
            "claimMappings": {
                "username": {"claim": "email", "prefix": prefix},
                "groups": {"claim": "groups", "prefix": prefix},
            },
        })
    }
}

fn write_config(path: &Path, issuers: &[Value]) {
    let config = json!({
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AuthenticationConfiguration",
        "jwt": issuers,
    });
    // YAML is a superset of JSON; written whole, then moved into place, as a config tool would.
    let staged = path.with_extension("tmp");
    std::fs::write(&staged, config.to_string()).unwrap();
    std::fs::rename(&staged, path).unwrap();
}

fn username(f: &SecureFixture, who: &Credential) -> Option<Value> {
    let (ok, out, _) = f.kubectl(who, &["auth", "whoami", "-o", "json"]);
    ok.then(|| serde_json::from_str::<Value>(&out).unwrap()["status"]["userInfo"].clone())
}

#[test]
fn identity_provider_tokens_log_in_and_the_configuration_reloads() {
    let idp = Issuer::start();
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("authn.yaml");
    write_config(&config, &[idp.entry("oidc:")]);
    let config_arg = config.display().to_string();
    let f = SecureFixture::start(&["--authentication-config", &config_arg]);

    let alice = json!({"email": "alice@example.com", "hd": "example.com", "groups": ["dev"]});
    let token = idp.token(alice.clone(), false);
    let user = username(&f, &token).expect("the provider's token logs in");
    assert_eq!(user["username"], "oidc:alice@example.com", "{user}");
    assert_eq!(
        user["groups"],
        json!(["oidc:dev", "system:authenticated"]),
        "{user}"
    );

    // RBAC by the mapped group.
    let denied = f.fails(
        &token,
        &["get", "--raw", "/api/v1/namespaces/default/configmaps"],
    );
    assert!(
        denied.contains(r#"User "oidc:alice@example.com" cannot list"#),
        "{denied}"
    );
    f.ok(
        &Credential::Admin,
        &[
            "create",
            "clusterrolebinding",
            "dev-view",
            "--clusterrole=view",
            "--group=oidc:dev",
        ],
    );
    f.eventually("the mapped group may list", || {
        f.kubectl(&token, &["get", "configmaps", "-n", "default"]).0
    });

    // Refused: another audience, expired, signed by a key the issuer never published, a claim
    // rule not met.
    let unauthorized = |who: &Credential| f.call(who, "GET", "/api", None).unwrap().code == 401;
    assert!(unauthorized(&idp.token(
        json!({"aud": "other", "email": "a@x", "hd": "example.com"}),
        false
    )));
    assert!(unauthorized(&idp.token(
        json!({"exp": 1_000_000, "iat": 999_000, "email": "a@x", "hd": "example.com"}),
        false
    )));
    assert!(unauthorized(&idp.token(alice.clone(), true)));
    assert!(unauthorized(
        &idp.token(json!({"email": "a@x", "hd": "evil.com"}), false)
    ));
    // The other authenticators are unaffected.
    assert!(f
        .ok(&Credential::Admin, &["auth", "whoami"])
        .contains("admin"));

    // A second issuer added to the file: its tokens work without a restart.
    let second = Issuer::start();
    write_config(&config, &[idp.entry("oidc:"), second.entry("corp:")]);
    let bob = second.token(
        json!({"email": "bob@example.com", "hd": "example.com"}),
        false,
    );
    f.eventually("the second issuer's token logs in", || {
        username(&f, &bob).is_some_and(|u| u["username"] == "corp:bob@example.com")
    });
    // A file that no longer reads keeps the last good configuration.
    // Moved into place whole, so the poller never reads half a file (which would count twice).
    let staged = config.with_extension("broken");
    std::fs::write(&staged, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt: [{issuer: {url: 'http://plain'}}]\n").unwrap();
    std::fs::rename(&staged, &config).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        username(&f, &bob).is_some(),
        "the last good configuration is kept"
    );
    assert!(username(&f, &token).is_some());
    let metrics = f
        .call(&Credential::Admin, "GET", "/metrics", None)
        .unwrap()
        .body;
    for status in ["success", "failure"] {
        let line = format!(
            "apiserver_authentication_config_controller_automatic_reloads_total{{status=\"{status}\"}} 1"
        );
        assert!(metrics.contains(&line), "{line} not in the metrics");
    }
    // Verifications are timed by issuer hash and result (the forged and expired tokens failed).
    for result in ["success", "failure"] {
        let timed = metrics.lines().any(|l| {
            l.starts_with("apiserver_authentication_jwt_authenticator_latency_seconds_count{jwt_issuer_hash=\"sha256:")
                && l.contains(&format!("result=\"{result}\""))
        });
        assert!(timed, "no {result} latency in the metrics");
    }
}

#[test]
fn an_invalid_authentication_configuration_stops_the_start_with_its_field_errors() {
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("authn.yaml");
    write_config(
        &config,
        &[
            json!({"issuer": {"url": "http://idp", "audiences": []}, "claimMappings": {"username": {"claim": "sub"}}}),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(strategy_host_e2e::host_binary().unwrap())
        .args(["--data-dir", &dir.path().join("d").display().to_string()])
        .args([
            "--listen",
            "127.0.0.1:0",
            "--authentication-config",
            &config.display().to_string(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            r#"jwt[0].issuer.url: Invalid value: "http://idp": URL scheme must be https"#
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("jwt[0].claimMappings.username.prefix: Required value"),
        "{stderr}"
    );
}

#[test]
fn cel_claim_mappings_map_the_user_and_anonymous_access_is_limited_to_listed_paths() {
    let idp = Issuer::start();
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("authn.yaml");
    let text = json!({
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AuthenticationConfiguration",
        "jwt": [{
            "issuer": {"url": idp.url, "audiences": ["kubernetes"], "certificateAuthority": idp.ca()},
            "claimValidationRules": [{"expression": "claims.hd == 'example.com'", "message": "the example.com domain only"}],
            "claimMappings": {
                "username": {"expression": "'corp:' + claims.preferred_username"},
                "groups": {"expression": "claims.roles.map(r, 'role:' + r)"},
                "extra": [{"key": "example.com/tenant", "valueExpression": "claims.tenant"}],
            },
            "userValidationRules": [{"expression": "!user.username.startsWith('corp:system')", "message": "no system names"}],
        }],
        "anonymous": {"enabled": true, "conditions": [{"path": "/livez"}, {"path": "/readyz"}]},
    });
    std::fs::write(&config, text.to_string()).unwrap();
    let config_arg = config.display().to_string();
    let f = SecureFixture::start(&["--authentication-config", &config_arg]);

    let claims = json!({"preferred_username": "alice", "hd": "example.com", "roles": ["dev", "ops"], "tenant": "blue"});
    let user = username(&f, &idp.token(claims.clone(), false)).expect("the token logs in");
    assert_eq!(user["username"], "corp:alice", "{user}");
    assert_eq!(
        user["groups"],
        json!(["role:dev", "role:ops", "system:authenticated"]),
        "{user}"
    );
    assert_eq!(
        user["extra"]["example.com/tenant"],
        json!(["blue"]),
        "{user}"
    );
    // A claim rule and a user rule that fail: 401.
    let unauthorized = |who: &Credential| f.call(who, "GET", "/api", None).unwrap().code == 401;
    let mut other_domain = claims.clone();
    other_domain["hd"] = json!("evil.com");
    assert!(unauthorized(&idp.token(other_domain, false)));
    let mut system = claims.clone();
    system["preferred_username"] = json!("system-admin");
    assert!(unauthorized(&idp.token(system, false)));

    // Anonymous only where the file lists it: /livez answers, /api (which RBAC would refuse
    // an anonymous user with 403) is 401.
    let anonymous = Credential::Anonymous;
    let livez = f.call(&anonymous, "GET", "/livez", None).unwrap();
    assert_eq!(livez.code, 200, "{}", livez.body);
    assert_eq!(f.call(&anonymous, "GET", "/api", None).unwrap().code, 401);
    let version = f.call(&anonymous, "GET", "/version", None).unwrap();
    assert_eq!(version.code, 401, "{}", version.body);
}
