//! A kubeconfig naming a webhook or a parent server (an authorization webhook's `connectionInfo`,
//! `--authentication-kubeconfig`, `--authorization-kubeconfig`): the server
//! URL and CA from its current context's cluster, and the credentials this server presents from
//! its user (a client certificate, a token). Files it names are read relative to it.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::Deserialize;

use super::ClientCertificate;

/// Where and how a webhook is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEndpoint {
    /// The URL the review is POSTed to.
    pub server: String,
    /// The CA certificates (PEM) its serving certificate must chain to (empty: the system's
    /// roots).
    pub certificate_authority: Vec<u8>,
    /// The client certificate presented, if any.
    pub client_certificate: Option<ClientCertificate>,
    /// The bearer token sent, if any.
    pub token: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct KubeConfig {
    #[serde(default)]
    clusters: Vec<Named<Cluster>>,
    #[serde(default)]
    users: Vec<Named<User>>,
    #[serde(default)]
    contexts: Vec<Named<Context>>,
    #[serde(default)]
    current_context: String,
}

#[derive(Debug, Deserialize)]
struct Named<T> {
    #[serde(default)]
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    value: T,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    #[serde(default)]
    server: String,
    #[serde(default)]
    certificate_authority: Option<String>,
    #[serde(default)]
    certificate_authority_data: Option<String>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct User {
    #[serde(default)]
    client_certificate: Option<String>,
    #[serde(default)]
    client_certificate_data: Option<String>,
    #[serde(default)]
    client_key: Option<String>,
    #[serde(default)]
    client_key_data: Option<String>,
    #[serde(default)]
    token: Option<String>,
    #[serde(default, rename = "tokenFile")]
    token_file: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Context {
    #[serde(default)]
    cluster: String,
    #[serde(default)]
    user: String,
}

/// Why a webhook's kubeconfig cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KubeConfigError {
    /// A file cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The kubeconfig is not YAML of a kubeconfig.
    #[error("decoding {path}: {source}")]
    Decode {
        /// The kubeconfig.
        path: PathBuf,
        /// Why.
        source: serde_yaml::Error,
    },
    /// A `*-data` field is not base64.
    #[error("{field} of {path} is not base64: {source}")]
    Base64 {
        /// The field.
        field: &'static str,
        /// The kubeconfig.
        path: PathBuf,
        /// Why.
        source: base64::DecodeError,
    },
    /// What the kubeconfig lacks or asks for that this server does not do.
    #[error("{path}: {problem}")]
    Unusable {
        /// The kubeconfig.
        path: PathBuf,
        /// What.
        problem: String,
    },
}

/// Reads the kubeconfig at `path`: its current context (or its only one), that context's
/// cluster and user.
///
/// # Errors
/// A file cannot be read or decoded; the kubeconfig names no server, no CA (this server trusts
/// only the CA given), or asks to skip TLS verification.
pub fn read(path: &Path) -> Result<WebhookEndpoint, KubeConfigError> {
    let read_file = |p: &Path| {
        std::fs::read(p).map_err(|source| KubeConfigError::Read {
            path: p.to_path_buf(),
            source,
        })
    };
    let text = read_file(path)?;
    let config: KubeConfig =
        serde_yaml::from_slice(&text).map_err(|source| KubeConfigError::Decode {
            path: path.to_path_buf(),
            source,
        })?;
    let unusable = |problem: String| KubeConfigError::Unusable {
        path: path.to_path_buf(),
        problem,
    };
    let context = match config.current_context.as_str() {
        "" => config.contexts.first(),
        name => config.contexts.iter().find(|c| c.name == name),
    };
    let (cluster_name, user_name) = match context {
        Some(c) => (c.value.cluster.as_str(), c.value.user.as_str()),
        None if config.contexts.is_empty() => ("", ""),
        None => {
            return Err(unusable(format!(
                "context {:?} not found",
                config.current_context
            )))
        }
    };
    let pick = |names: Vec<&str>, wanted: &str| match wanted {
        "" => names.first().map(|_| 0),
        wanted => names.iter().position(|n| *n == wanted),
    };
    let cluster = pick(
        config.clusters.iter().map(|c| c.name.as_str()).collect(),
        cluster_name,
    )
    .map(|i| &config.clusters[i].value)
    .ok_or_else(|| unusable(format!("cluster {cluster_name:?} not found")))?;
    let user = pick(
        config.users.iter().map(|u| u.name.as_str()).collect(),
        user_name,
    )
    .map(|i| &config.users[i].value);
    if cluster.server.is_empty() {
        return Err(unusable("the cluster names no server".into()));
    }
    if cluster.insecure_skip_tls_verify {
        return Err(unusable(
            "insecure-skip-tls-verify is not supported: give the webhook's certificate-authority"
                .into(),
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let data = |field: &'static str, inline: &Option<String>, file: &Option<String>| match (
        inline, file,
    ) {
        (Some(b64), _) => base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map(Some)
            .map_err(|source| KubeConfigError::Base64 {
                field,
                path: path.to_path_buf(),
                source,
            }),
        (None, Some(file)) => read_file(&dir.join(file)).map(Some),
        (None, None) => Ok(None),
    };
    let certificate_authority = data(
        "certificate-authority-data",
        &cluster.certificate_authority_data,
        &cluster.certificate_authority,
    )?
    .unwrap_or_default();
    let mut endpoint = WebhookEndpoint {
        server: cluster.server.clone(),
        certificate_authority,
        client_certificate: None,
        token: None,
    };
    if let Some(user) = user {
        let certificate = data(
            "client-certificate-data",
            &user.client_certificate_data,
            &user.client_certificate,
        )?;
        let key = data("client-key-data", &user.client_key_data, &user.client_key)?;
        endpoint.client_certificate = match (certificate, key) {
            (Some(certificate), Some(key)) => Some(ClientCertificate { certificate, key }),
            (None, None) => None,
            _ => {
                return Err(unusable(
                    "the user gives a client certificate without its key, or a key without its certificate".into(),
                ))
            }
        };
        endpoint.token = match (&user.token, &user.token_file) {
            (Some(token), _) => Some(token.clone()),
            (None, Some(file)) => Some(
                String::from_utf8_lossy(&read_file(&dir.join(file))?)
                    .trim()
                    .to_string(),
            ),
            (None, None) => None,
        };
    }
    Ok(endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_context_picks_the_cluster_and_the_user() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), "CA").unwrap();
        std::fs::write(dir.path().join("token"), "secret\n").unwrap();
        let path = dir.path().join("webhook.kubeconfig");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: other\n  cluster:\n    server: https://other\n\
             - name: authz\n  cluster:\n    server: https://authz.example:8443/authorize\n    certificate-authority: ca.pem\n\
             users:\n- name: apiserver\n  user:\n    tokenFile: token\n\
             contexts:\n- name: webhook\n  context:\n    cluster: authz\n    user: apiserver\ncurrent-context: webhook\n",
        )
        .unwrap();
        let endpoint = read(&path).unwrap();
        assert_eq!(endpoint.server, "https://authz.example:8443/authorize");
        assert_eq!(endpoint.certificate_authority, b"CA");
        assert_eq!(endpoint.token.as_deref(), Some("secret"));
        assert_eq!(endpoint.client_certificate, None);
    }

    #[test]
    fn a_cluster_without_a_ca_trusts_the_system_and_skipping_verification_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        std::fs::write(
            &path,
            "clusters:\n- name: c\n  cluster:\n    server: https://x\n",
        )
        .unwrap();
        assert!(read(&path).unwrap().certificate_authority.is_empty());
        std::fs::write(
            &path,
            "clusters:\n- name: c\n  cluster:\n    server: https://x\n    insecure-skip-tls-verify: true\n",
        )
        .unwrap();
        assert!(read(&path)
            .unwrap_err()
            .to_string()
            .contains("insecure-skip-tls-verify is not supported"));
    }
}
