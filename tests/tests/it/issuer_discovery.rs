//! ServiceAccount issuer discovery as a relying party uses it: a ServiceAccount reads the
//! OpenID configuration and the key set (anonymous requests may not), and an independent JWT
//! library (PyJWT) verifies `kubectl create token` tokens against the published keys and
//! refuses one signed by another key.

use std::path::Path;

use serde_json::Value;
use strategy_host_e2e::secure::{Credential, SecureFixture};

/// Runs tests/python/verify_token.py: the verified claims, or `Err` with why PyJWT refused.
fn verify_with_pyjwt(
    jwks: &Path,
    token: &str,
    issuer: &str,
    audience: &str,
) -> Result<Value, String> {
    let out = strategy_host_e2e::pyjwt::command("verify_token.py")
        .args([
            jwks.as_os_str(),
            token.as_ref(),
            issuer.as_ref(),
            audience.as_ref(),
        ])
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answer: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "verify_token.py printed no JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    if out.status.success() {
        Ok(answer)
    } else {
        Err(answer["refused"].as_str().unwrap_or_default().to_string())
    }
}

#[test]
fn service_account_tokens_verify_against_the_published_issuer_keys() {
    let f = SecureFixture::start(&[]);
    let admin = Credential::Admin;
    f.ok(&admin, &["create", "namespace", "team"]);
    f.ok(&admin, &["create", "serviceaccount", "robot", "-n", "team"]);
    let token = f
        .ok(
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
        .trim()
        .to_string();
    let robot = Credential::token(
        f.ok(&admin, &["create", "token", "robot", "-n", "team"])
            .trim(),
    );

    // Every ServiceAccount may read the documents (the bootstrap binding); anonymous may not.
    let anonymous = f
        .call(
            &Credential::Anonymous,
            "GET",
            "/.well-known/openid-configuration",
            None,
        )
        .unwrap();
    assert_eq!(anonymous.code, 403, "{}", anonymous.body);
    let configuration: Value = serde_json::from_str(&f.ok(
        &robot,
        &["get", "--raw", "/.well-known/openid-configuration"],
    ))
    .unwrap();
    let issuer = "https://kubernetes.default.svc.cluster.local";
    assert_eq!(configuration["issuer"], issuer);
    assert_eq!(configuration["jwks_uri"], f.host.url("/openid/v1/jwks"));
    assert_eq!(
        configuration["response_types_supported"],
        serde_json::json!(["id_token"])
    );
    assert_eq!(
        configuration["subject_types_supported"],
        serde_json::json!(["public"])
    );
    assert_eq!(
        configuration["id_token_signing_alg_values_supported"],
        serde_json::json!(["ES256"])
    );
    let keys = f.call(&robot, "GET", "/openid/v1/jwks", None).unwrap();
    assert_eq!(keys.code, 200, "{}", keys.body);
    assert_eq!(keys.content_type, "application/jwk-set+json");
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, &keys.body).unwrap();

    // PyJWT verifies the token with the published key its `kid` names.
    let claims = verify_with_pyjwt(&jwks, &token, issuer, "vault").expect("the token verifies");
    assert_eq!(claims["sub"], "system:serviceaccount:team:robot");
    assert_eq!(claims["kubernetes.io"]["serviceaccount"]["name"], "robot");
    // Another audience than the token's, and a token signed by a key the server never had.
    let refused = verify_with_pyjwt(&jwks, &token, issuer, "other").unwrap_err();
    assert!(refused.contains("Audience"), "{refused}");
    let header: Value = {
        use base64::Engine as _;
        let part = token.split('.').next().unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(part)
                .unwrap(),
        )
        .unwrap()
    };
    let other = rcgen::KeyPair::generate().unwrap().serialize_pem();
    let forged = jsonwebtoken::encode(
        &jsonwebtoken::Header {
            kid: header["kid"].as_str().map(String::from),
            ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256)
        },
        &serde_json::json!({"iss": issuer, "aud": ["vault"], "sub": "system:serviceaccount:team:robot",
            "exp": 4_000_000_000u64}),
        &jsonwebtoken::EncodingKey::from_ec_pem(other.as_bytes()).unwrap(),
    )
    .unwrap();
    let refused = verify_with_pyjwt(&jwks, &forged, issuer, "vault").unwrap_err();
    assert!(
        refused.contains("Signature verification failed"),
        "{refused}"
    );
}

#[test]
fn an_issuer_that_is_not_https_serves_no_discovery_documents() {
    let f = SecureFixture::start(&["--service-account-issuer", "http://issuer.example"]);
    let reply = f
        .call(
            &Credential::Admin,
            "GET",
            "/.well-known/openid-configuration",
            None,
        )
        .unwrap();
    assert_eq!(reply.code, 404, "{}", reply.body);
    // Tokens are still issued and accepted.
    f.ok(&Credential::Admin, &["create", "serviceaccount", "robot"]);
    let robot = Credential::token(
        f.ok(&Credential::Admin, &["create", "token", "robot"])
            .trim(),
    );
    assert!(f
        .ok(&robot, &["auth", "whoami"])
        .contains("system:serviceaccount:default:robot"));
}
