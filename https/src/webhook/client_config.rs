//! A webhook's `clientConfig` (`url` or `service`, and `caBundle`), as admission webhook
//! configurations and CRD conversion webhooks both declare it, and the call through it.

use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

/// Where a webhook is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`: `namespace/name:port/path`, which this host cannot reach.
    Service(String),
}

/// A parsed `clientConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// Where the webhook is called.
    pub endpoint: Endpoint,
    /// `caBundle`, decoded (PEM).
    pub ca_bundle: Option<Vec<u8>>,
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or_default()
}

impl ClientConfig {
    /// Reads a `clientConfig` object (missing parts are empty).
    pub fn parse(client: &Value) -> Self {
        let endpoint = match client.get("url").and_then(Value::as_str) {
            Some(url) => Endpoint::Url(url.to_string()),
            None => {
                let s = client.get("service").cloned().unwrap_or(Value::Null);
                let port = s.get("port").and_then(Value::as_u64).unwrap_or(443);
                Endpoint::Service(format!(
                    "{}/{}:{port}{}",
                    text(&s, "namespace"),
                    text(&s, "name"),
                    text(&s, "path")
                ))
            }
        };
        let ca_bundle = client
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok());
        Self {
            endpoint,
            ca_bundle,
        }
    }

    /// POSTs `review` to the webhook within `timeout`; answers its response.
    ///
    /// # Errors
    /// What went wrong, as `Post "URL": reason`; a `service` endpoint, which this host cannot
    /// reach, says so.
    pub async fn post(&self, review: &Value, timeout: Duration) -> Result<Value, super::CallError> {
        match &self.endpoint {
            Endpoint::Url(url) => {
                super::post(url, self.ca_bundle.as_deref(), review, timeout).await
            }
            Endpoint::Service(service) => Err(super::CallError::Unreachable(service.clone())),
        }
    }
}
