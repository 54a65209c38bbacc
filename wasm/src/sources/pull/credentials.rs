//! Registry credentials from a `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson`:
//! the entry for the module's registry, found as docker and the kubelet find it.

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde_json::Value;

/// Why a pull secret gives no credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsError {
    /// Not JSON, or no `auths` object.
    #[error("is not a docker config (a JSON object with \"auths\"): {0}")]
    Malformed(String),
    /// The entry's `auth` is not base64 of `user:password`.
    #[error("the \"auth\" of {0:?} is not base64 of USER:PASSWORD")]
    BadAuth(String),
}

/// The credentials `config` (a `.dockerconfigjson`) holds for `registry` (`host[:port]`);
/// anonymous when it holds none.
///
/// # Errors
/// The config is not a docker config, or the matching entry is malformed.
pub fn registry_auth(config: &[u8], registry: &str) -> Result<RegistryAuth, CredentialsError> {
    let config: Value =
        serde_json::from_slice(config).map_err(|e| CredentialsError::Malformed(e.to_string()))?;
    let auths = config
        .get("auths")
        .and_then(Value::as_object)
        .ok_or_else(|| CredentialsError::Malformed("no \"auths\" object".into()))?;
    let entry = auths.iter().find(|(key, _)| names_registry(key, registry));
    let Some((key, entry)) = entry else {
        return Ok(RegistryAuth::Anonymous);
    };
    if let Some(token) = entry.get("registrytoken").and_then(Value::as_str) {
        return Ok(RegistryAuth::Bearer(token.to_owned()));
    }
    let text = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or("");
    let (user, password) = match text("auth") {
        "" => (text("username").to_owned(), text("password").to_owned()),
        auth => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| CredentialsError::BadAuth(key.clone()))?;
            let (u, p) = decoded
                .split_once(':')
                .ok_or_else(|| CredentialsError::BadAuth(key.clone()))?;
            (u.to_owned(), p.to_owned())
        }
    };
    if user.is_empty() && password.is_empty() {
        return Ok(RegistryAuth::Anonymous);
    }
    Ok(RegistryAuth::Basic(user, password))
}

/// Whether a config key (`host`, `https://host/v1/`, ...) names `registry`; Docker Hub answers
/// to its historical names too.
fn names_registry(key: &str, registry: &str) -> bool {
    let host = key
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or("");
    let hub = |h: &str| matches!(h, "docker.io" | "index.docker.io" | "registry-1.docker.io");
    host.eq_ignore_ascii_case(registry) || (hub(host) && hub(registry))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(user: &str, password: &str) -> RegistryAuth {
        RegistryAuth::Basic(user.into(), password.into())
    }

    fn same(a: &RegistryAuth, b: &RegistryAuth) -> bool {
        format!("{a:?}") == format!("{b:?}")
            && match (a, b) {
                (RegistryAuth::Basic(u1, p1), RegistryAuth::Basic(u2, p2)) => u1 == u2 && p1 == p2,
                (RegistryAuth::Bearer(t1), RegistryAuth::Bearer(t2)) => t1 == t2,
                _ => true,
            }
    }

    #[test]
    fn finds_the_registrys_entry_in_each_form_docker_writes() {
        let auth = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
        let config = serde_json::json!({"auths": {
            "https://registry.example.com:5000/v1/": {"auth": auth},
            "ghcr.io": {"username": "bob", "password": "pw"},
            "https://index.docker.io/v1/": {"registrytoken": "tok"},
        }})
        .to_string();
        let got = |r: &str| registry_auth(config.as_bytes(), r).unwrap();
        assert!(same(
            &got("registry.example.com:5000"),
            &basic("alice", "s3cret")
        ));
        assert!(same(&got("ghcr.io"), &basic("bob", "pw")));
        assert!(same(&got("docker.io"), &RegistryAuth::Bearer("tok".into())));
        assert!(same(&got("quay.io"), &RegistryAuth::Anonymous));
    }

    #[test]
    fn malformed_configs_and_entries_are_errors() {
        assert!(matches!(
            registry_auth(b"{}", "r"),
            Err(CredentialsError::Malformed(_))
        ));
        let config = br#"{"auths": {"r": {"auth": "bm8gY29sb24="}}}"#;
        assert_eq!(
            registry_auth(config, "r").unwrap_err(),
            CredentialsError::BadAuth("r".into())
        );
    }
}
