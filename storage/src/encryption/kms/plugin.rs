//! The client of a KMS v2 plugin: Kubernetes' `v2.KeyManagementService` gRPC API (`Status`,
//! `Encrypt`, `Decrypt`) over the plugin's unix socket. Calls run on one runtime of their own,
//! so that the synchronous encryption path (the stores seal and open values outside async code)
//! can wait for an answer from anywhere, a tokio worker included.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hyper_util::rt::TokioIo;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use tonic::transport::{Channel, Endpoint};

use super::error::PluginError;

/// `v2.StatusRequest`.
#[derive(Clone, PartialEq, prost::Message)]
struct StatusRequest {}

/// `v2.StatusResponse`: the plugin's API version, health and current key.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StatusResponse {
    /// The plugin's API version: `v2` (or `v2beta1`).
    #[prost(string, tag = "1")]
    pub version: String,
    /// `ok`, or why the plugin is unhealthy.
    #[prost(string, tag = "2")]
    pub healthz: String,
    /// The key encryption key that new writes would be sealed with.
    #[prost(string, tag = "3")]
    pub key_id: String,
}

/// `v2.DecryptRequest`.
#[derive(Clone, PartialEq, prost::Message)]
struct DecryptRequest {
    #[prost(bytes = "vec", tag = "1")]
    ciphertext: Vec<u8>,
    #[prost(string, tag = "2")]
    uid: String,
    #[prost(string, tag = "3")]
    key_id: String,
    #[prost(btree_map = "string, bytes", tag = "4")]
    annotations: BTreeMap<String, Vec<u8>>,
}

/// `v2.DecryptResponse`.
#[derive(Clone, PartialEq, prost::Message)]
struct DecryptResponse {
    #[prost(bytes = "vec", tag = "1")]
    plaintext: Vec<u8>,
}

/// `v2.EncryptRequest`.
#[derive(Clone, PartialEq, prost::Message)]
struct EncryptRequest {
    #[prost(bytes = "vec", tag = "1")]
    plaintext: Vec<u8>,
    #[prost(string, tag = "2")]
    uid: String,
}

/// `v2.EncryptResponse`: the sealed bytes, the key that sealed them and the plugin's notes.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct EncryptResponse {
    /// The sealed bytes.
    #[prost(bytes = "vec", tag = "1")]
    pub ciphertext: Vec<u8>,
    /// The key encryption key that sealed them.
    #[prost(string, tag = "2")]
    pub key_id: String,
    /// What the plugin wants stored beside them (in plain text).
    #[prost(btree_map = "string, bytes", tag = "3")]
    pub annotations: BTreeMap<String, Vec<u8>>,
}

/// The labels of kube-apiserver's `apiserver_envelope_encryption_kms_operations_latency_seconds`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct OperationLabels {
    pub provider_name: String,
    pub method_name: &'static str,
    pub grpc_status_code: String,
}

/// How long KMS calls take, by plugin, method and outcome.
pub(super) fn operation_latency() -> &'static Family<OperationLabels, Histogram> {
    static LATENCY: OnceLock<Family<OperationLabels, Histogram>> = OnceLock::new();
    LATENCY.get_or_init(|| {
        Family::new_with_constructor(|| {
            Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
                0.0001, 2.0, 15,
            ))
        })
    })
}

/// The runtime every plugin's calls and status checks run on (never dropped: a static).
pub(super) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("kms-plugin")
            .enable_all()
            .build()
            .expect("the KMS plugins' runtime starts")
    })
}

/// One plugin's connection (made when first used, and again after the plugin restarts).
#[derive(Clone, derive_more::Debug)]
pub(super) struct PluginClient {
    /// The provider's name, for errors and metrics.
    name: String,
    #[debug(skip)]
    channel: Channel,
    #[debug(skip)]
    timeout: Duration,
}

impl PluginClient {
    /// A client of the plugin listening on the unix socket `socket`, each call bounded by
    /// `timeout`.
    pub(super) fn new(name: &str, socket: PathBuf, timeout: Duration) -> Self {
        // The URI is required by the transport and ignored by the connector.
        let endpoint = Endpoint::from_static("http://kms-plugin.invalid").timeout(timeout);
        let _runtime = runtime().enter();
        let channel = endpoint.connect_with_connector_lazy(tower::service_fn(move |_| {
            let socket = socket.clone();
            async move {
                tokio::net::UnixStream::connect(socket)
                    .await
                    .map(TokioIo::new)
            }
        }));
        Self {
            name: name.to_string(),
            channel,
            timeout,
        }
    }

    /// `Status`.
    pub(super) async fn status(&self) -> Result<StatusResponse, PluginError> {
        self.call("Status", StatusRequest {}).await
    }

    /// `Encrypt` of `plaintext`.
    pub(super) async fn encrypt(&self, plaintext: Vec<u8>) -> Result<EncryptResponse, PluginError> {
        let request = EncryptRequest {
            plaintext,
            uid: uid(),
        };
        self.call("Encrypt", request).await
    }

    /// `Decrypt` of `ciphertext`, sealed by `key_id` with `annotations`, waited for here (a
    /// read of a value whose key is not cached yet).
    pub(super) fn decrypt_blocking(
        &self,
        ciphertext: Vec<u8>,
        key_id: String,
        annotations: BTreeMap<String, Vec<u8>>,
    ) -> Result<Vec<u8>, PluginError> {
        let request = DecryptRequest {
            ciphertext,
            uid: uid(),
            key_id,
            annotations,
        };
        let client = self.clone();
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        runtime().spawn(async move {
            let reply: Result<DecryptResponse, _> = client.call("Decrypt", request).await;
            let _ = answer.send(reply.map(|r| r.plaintext));
        });
        // The call is bounded by the timeout; a little more covers the runtime's scheduling.
        answered
            .recv_timeout(self.timeout + Duration::from_secs(1))
            .unwrap_or(Err(PluginError::NoAnswer))
    }

    /// One unary call of `method`, bounded by the timeout and timed in the latency metric.
    async fn call<Req, Resp>(&self, method: &'static str, request: Req) -> Result<Resp, PluginError>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let started = Instant::now();
        let outcome = tokio::time::timeout(self.timeout, async {
            let mut grpc = tonic::client::Grpc::new(self.channel.clone());
            grpc.ready().await.map_err(|e| {
                tonic::Status::unavailable(format!("connecting to the KMS plugin: {e}"))
            })?;
            let path = tonic::codegen::http::uri::PathAndQuery::from_static(match method {
                "Status" => "/v2.KeyManagementService/Status",
                "Encrypt" => "/v2.KeyManagementService/Encrypt",
                _ => "/v2.KeyManagementService/Decrypt",
            });
            grpc.unary(
                tonic::Request::new(request),
                path,
                tonic_prost::ProstCodec::default(),
            )
            .await
            .map(tonic::Response::into_inner)
        })
        .await
        .unwrap_or_else(|_| {
            Err(tonic::Status::deadline_exceeded(
                "context deadline exceeded",
            ))
        });
        let code = match &outcome {
            Ok(_) => tonic::Code::Ok,
            Err(status) => status.code(),
        };
        operation_latency()
            .get_or_create(&OperationLabels {
                provider_name: self.name.clone(),
                method_name: method,
                grpc_status_code: format!("{code:?}"),
            })
            .observe(started.elapsed().as_secs_f64());
        outcome.map_err(|status| PluginError::Rpc {
            code,
            message: status.message().trim().to_string(),
        })
    }
}

/// A random (version 4) UUID, which kube-apiserver sends with each call for the plugin's logs.
fn uid() -> String {
    let mut bytes: [u8; 16] = rand::random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uid_is_a_version_4_uuid() {
        let u = uid();
        assert_eq!(u.len(), 36, "{u}");
        assert_eq!(&u[14..15], "4", "{u}");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
        assert_ne!(uid(), u);
    }

    #[test]
    fn an_absent_plugin_is_an_error_within_the_timeout() {
        let client = PluginClient::new(
            "absent",
            PathBuf::from("/nonexistent/kms.sock"),
            Duration::from_millis(300),
        );
        let started = Instant::now();
        let error = client
            .decrypt_blocking(b"x".to_vec(), "k".into(), BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("rpc error: code = "), "{error}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
