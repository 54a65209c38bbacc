//! Security end to end, as users meet it: the server run without `--dev-mode` (HTTPS with its
//! generated certificates), kubectl 1.35 with the generated admin kubeconfig, a token-file user,
//! a ServiceAccount token from `kubectl create token`, a client-certificate user; RBAC allowing
//! and denying as Kubernetes does; hostile credentials answered 401 with nothing else happening;
//! and the audit log. RBAC has its own file.

use std::time::Duration;

use serde_json::json;
use strategy_host_e2e::secure::{Credential, SecureFixture};

mod rbac;

const TOKENS: &str = "alice-token,alice,uid-alice,\"dev,qa\"\nbob-token,bob,uid-bob\n";

/// A secure server with the token file above; the file's directory lives as long as it.
fn with_token_file(extra: &[&str]) -> (SecureFixture, tempfile::TempDir) {
    SecureFixture::start_with_tokens(TOKENS, extra)
}

#[test]
fn the_first_start_writes_an_admin_kubeconfig_that_survives_a_restart() {
    let mut f = SecureFixture::start(&[]);
    let whoami = f.ok(&Credential::Admin, &["auth", "whoami"]);
    assert!(
        whoami.contains("admin") && whoami.contains("system:masters"),
        "{whoami}"
    );
    f.ok(&Credential::Admin, &["create", "namespace", "team"]);
    assert!(f
        .ok(&Credential::Admin, &["get", "namespaces"])
        .contains("team"));
    assert_eq!(
        f.ok(&Credential::Admin, &["auth", "can-i", "*", "*"])
            .trim(),
        "yes"
    );

    // A restart reuses the CA, so the kubeconfig users already copied keeps working.
    let ca = std::fs::read_to_string(f.ca_file()).unwrap();
    let data = f.data().display().to_string();
    f.host.terminate().unwrap();
    f.host = strategy_host_e2e::HostProcess::start_secure(&["--data-dir", &data]).unwrap();
    assert_eq!(std::fs::read_to_string(f.ca_file()).unwrap(), ca);
    assert!(f
        .ok(&Credential::Admin, &["get", "namespaces"])
        .contains("team"));
}

#[test]
fn hostile_credentials_get_401_and_the_server_serves_on() {
    let (f, _files) = with_token_file(&[]);
    for bad in [
        "Bearer garbage",
        "Bearer eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln",
        "Basic YWRtaW46YWRtaW4=",
        "Bearer ",
        "Negotiate xyz",
    ] {
        let reply = f
            .call_with_authorization("/api/v1/namespaces", bad)
            .unwrap();
        assert_eq!(reply.code, 401, "{bad}: {}", reply.body);
        let status = reply.json();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "Unauthorized");
        assert_eq!(status["message"], "Unauthorized");
    }
    // A certificate from another CA: 401 over the same TLS, not a failed handshake.
    let foreign = f.client_certificate("admin", "system:masters", false);
    let reply = f.call(&foreign, "GET", "/api/v1/namespaces", None).unwrap();
    assert_eq!(reply.code, 401, "{}", reply.body);
    let refused = f.fails(&foreign, &["get", "ns"]);
    assert!(
        refused.contains("You must be logged in to the server"),
        "{refused}"
    );
    // Nothing was created by any of it, and the server answers.
    let list = f
        .call(&Credential::Admin, "GET", "/api/v1/namespaces", None)
        .unwrap();
    assert_eq!(list.code, 200);
    let names: Vec<_> = list.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["default", "kube-public", "kube-system"]);
}

#[test]
fn anonymous_requests_are_authorized_like_kubernetes() {
    let f = SecureFixture::start(&[]);
    let health = f
        .call(&Credential::Anonymous, "GET", "/healthz", None)
        .unwrap();
    assert_eq!(
        health.code, 200,
        "public info is for everyone: {}",
        health.body
    );
    let api = f.call(&Credential::Anonymous, "GET", "/api", None).unwrap();
    assert_eq!(api.code, 403);
    assert_eq!(
        api.json()["message"],
        r#"forbidden: User "system:anonymous" cannot get path "/api""#
    );
    let list = f
        .call(
            &Credential::Anonymous,
            "GET",
            "/api/v1/namespaces/default/secrets",
            None,
        )
        .unwrap();
    assert_eq!(list.code, 403);
    assert_eq!(
        list.json()["message"],
        r#"secrets is forbidden: User "system:anonymous" cannot list resource "secrets" in API group "" in the namespace "default""#
    );
    drop(f);
    let closed = SecureFixture::start(&["--anonymous-auth=false"]);
    let health = closed
        .call(&Credential::Anonymous, "GET", "/healthz", None)
        .unwrap();
    assert_eq!(health.code, 401);
}

#[test]
fn service_account_tokens_work_until_their_account_is_gone() {
    let f = SecureFixture::start(&[]);
    let admin = Credential::Admin;
    f.ok(&admin, &["create", "namespace", "team"]);
    f.ok(&admin, &["create", "serviceaccount", "robot", "-n", "team"]);
    let robot = Credential::token(
        f.ok(&admin, &["create", "token", "robot", "-n", "team"])
            .trim(),
    );
    let whoami = f.ok(&robot, &["auth", "whoami"]);
    assert!(
        whoami.contains("system:serviceaccount:team:robot"),
        "{whoami}"
    );
    assert!(whoami.contains("system:serviceaccounts:team"), "{whoami}");

    // Another audience: not for this server.
    let vault = Credential::token(
        f.ok(
            &admin,
            &[
                "create",
                "token",
                "robot",
                "-n",
                "team",
                "--audience",
                "vault",
            ],
        )
        .trim(),
    );
    assert_eq!(f.call(&vault, "GET", "/api", None).unwrap().code, 401);
    // Too short a lifetime is refused as Kubernetes does.
    let short = f.fails(
        &admin,
        &["create", "token", "robot", "-n", "team", "--duration", "1m"],
    );
    assert!(
        short.contains("may not specify a duration less than 10 minutes"),
        "{short}"
    );

    // Signed with the server's key but expired; and a valid-looking token signed by another key.
    let key = std::fs::read_to_string(f.data().join("pki/service-account.key")).unwrap();
    let claims = |exp: u64| {
        json!({"iss": "https://kubernetes.default.svc.cluster.local", "sub": "system:serviceaccount:team:robot",
            "aud": ["https://kubernetes.default.svc.cluster.local"], "exp": exp, "iat": 1, "nbf": 1, "jti": "x",
            "kubernetes.io": {"namespace": "team", "serviceaccount": {"name": "robot", "uid": "whatever"}}})
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let sign = |pem: &str, exp: u64| {
        let key = jsonwebtoken::EncodingKey::from_ec_pem(pem.as_bytes()).unwrap();
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256),
            &claims(exp),
            &key,
        )
        .unwrap()
    };
    let expired = Credential::token(&sign(&key, now - 3600));
    assert_eq!(f.call(&expired, "GET", "/api", None).unwrap().code, 401);
    let other_key = rcgen::KeyPair::generate().unwrap().serialize_pem();
    let forged = Credential::token(&sign(&other_key, now + 3600));
    assert_eq!(f.call(&forged, "GET", "/api", None).unwrap().code, 401);

    // Deleting the account revokes its tokens.
    f.ok(&admin, &["delete", "serviceaccount", "robot", "-n", "team"]);
    f.eventually("the deleted account's token is refused", || {
        f.call(&robot, "GET", "/api", None).unwrap().code == 401
    });
    // Recreated under the same name, it is another account: once a token of the new account
    // is accepted (the server has seen it), the old token stays refused.
    f.ok(&admin, &["create", "serviceaccount", "robot", "-n", "team"]);
    let recreated = Credential::token(
        f.ok(&admin, &["create", "token", "robot", "-n", "team"])
            .trim(),
    );
    f.eventually("the recreated account's own token is accepted", || {
        f.call(&recreated, "GET", "/api", None).unwrap().code == 200
    });
    assert_eq!(f.call(&robot, "GET", "/api", None).unwrap().code, 401);
}

#[test]
fn client_certificates_name_their_user_and_groups() {
    let f = SecureFixture::start(&[]);
    let carol = f.client_certificate("carol", "dev", true);
    let whoami = f.ok(&carol, &["auth", "whoami"]);
    assert!(
        whoami.contains("carol") && whoami.contains("dev"),
        "{whoami}"
    );
    let denied = f.fails(&carol, &["get", "secrets"]);
    assert!(
        denied.contains(r#"User "carol" cannot list resource "secrets""#),
        "{denied}"
    );
    // A certificate in system:masters from the server's CA is an admin.
    let root = f.client_certificate("root", "system:masters", true);
    f.ok(&root, &["create", "namespace", "by-root"]);
}

#[test]
fn the_audit_log_has_a_line_per_request_stage() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let log_arg = log.display().to_string();
    let f = SecureFixture::start(&["--audit-log-path", &log_arg, "--audit-level", "Metadata"]);
    let ok = f
        .call(
            &Credential::Admin,
            "GET",
            "/api/v1/namespaces/default",
            None,
        )
        .unwrap();
    assert_eq!(ok.code, 200);
    let forbidden = f
        .call(&Credential::Anonymous, "GET", "/api/v1/namespaces", None)
        .unwrap();
    assert_eq!(forbidden.code, 403);
    let unauthorized = f
        .call_with_authorization("/api/v1/namespaces", "Bearer nope")
        .unwrap();
    assert_eq!(unauthorized.code, 401);
    let created = f
        .call(
            &Credential::Admin,
            "POST",
            "/api/v1/namespaces",
            Some(&json!({"metadata": {"name": "audited"}})),
        )
        .unwrap();
    assert_eq!(created.code, 201);
    // The writer thread flushes when its queue empties.
    let mut complete = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while complete.len() < 4 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        complete = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("each line is JSON"))
            .filter(|e| {
                e["stage"] == "ResponseComplete"
                    && e["requestURI"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with("/api/v1/namespaces")
            })
            .collect();
    }
    let codes: Vec<_> = complete
        .iter()
        .map(|e| e["responseStatus"]["code"].as_u64().unwrap())
        .collect();
    assert_eq!(codes, [200, 403, 401, 201], "{complete:#?}");
    assert_eq!(complete[0]["kind"], "Event");
    assert_eq!(complete[0]["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(complete[0]["level"], "Metadata");
    assert_eq!(complete[0]["user"]["username"], "admin");
    assert_eq!(complete[0]["verb"], "get");
    assert_eq!(complete[0]["objectRef"]["resource"], "namespaces");
    assert_eq!(complete[1]["user"]["username"], "system:anonymous");
    assert_eq!(
        complete[1]["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    assert_eq!(complete[3]["verb"], "create");
    assert!(
        complete[3].get("requestObject").is_none(),
        "Metadata level logs no bodies"
    );
}
