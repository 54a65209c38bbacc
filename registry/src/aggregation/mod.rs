//! Reaching extension API servers (kube-aggregator's side of the registry): the APIServices
//! that name a Service, followed with the Services, EndpointSlices and Endpoints they resolve
//! through (`backend.rs`), and a pooled HTTPS client per APIService (`client.rs`) presenting the
//! front proxy's certificate. The API's proxy and discovery and the availability controller
//! all reach backends through [`Aggregation`].

pub mod backend;
pub mod client;
pub mod discovery;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::body::Bytes;
/// The method of a [`Aggregation::request`].
pub use hyper::Method;
use serde_json::Value;

use crate::follow::{Store, Writer};
use crate::served::Registry;
use backend::{slice_service, Location, ServiceStores, Unavailable};
use client::{BackendClient, BackendTrust, ProxyBody};
use strategy_host_https::webhook::ClientCertificate;

/// The user kube-aggregator asks backends' discovery as.
pub const AGGREGATOR_USER: &str = "system:kube-aggregator";
/// The largest discovery document read from a backend.
const MAX_DISCOVERY_BYTES: usize = 8 * 1024 * 1024;

/// An APIService's reachable backend: where, and the client to send with.
#[derive(Debug, Clone)]
pub struct Backend {
    /// Where the backend answers.
    pub location: Location,
    /// The client (verifies the backend, presents the front proxy's certificate).
    pub client: BackendClient,
}

/// The followed APIServices and what their backends resolve through.
pub struct Aggregation {
    apiservices: Store,
    services: ServiceStores,
    identity: Option<ClientCertificate>,
    /// APIService name → (what the client was built from, the client).
    clients: Mutex<HashMap<String, (Value, BackendClient)>>,
    discovery: Arc<discovery::RemoteDiscovery>,
    /// APIServices whose backend failed a proxied request since their last check.
    failed: Mutex<std::collections::HashSet<String>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Aggregation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aggregation")
            .field("apiservices", &self.apiservices.len())
            .finish_non_exhaustive()
    }
}

impl Drop for Aggregation {
    fn drop(&mut self) {
        for task in self.tasks.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            task.abort();
        }
    }
}

/// Whether an APIService's `Available` condition is `True`.
pub fn is_available(apiservice: &Value) -> bool {
    apiservice
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Available" && c["status"] == "True")
}

/// Whether an APIService names a Service (its group/version is served elsewhere).
pub fn is_remote(apiservice: &Value) -> bool {
    apiservice
        .pointer("/spec/service")
        .is_some_and(Value::is_object)
}

impl Aggregation {
    /// Follows APIServices, Services, EndpointSlices and Endpoints through `registry`;
    /// backends are shown `identity` (the front proxy's client certificate).
    pub fn start(registry: &Registry, identity: Option<ClientCertificate>) -> Arc<Self> {
        let mut tasks = Vec::new();
        let mut reflect = |group: &str, plural: &str, writer: Writer| match registry
            .resolve(group, "v1", plural)
        {
            Some(served) => {
                let (store, task) = served.reflect("v1", writer);
                tasks.push(task);
                store
            }
            None => writer.reader(),
        };
        let apiservices = reflect(crate::apiservice::GROUP, "apiservices", Writer::new());
        let services = ServiceStores {
            services: reflect("", "services", Writer::new()),
            slices: reflect(
                "discovery.k8s.io",
                "endpointslices",
                Writer::new().with_index("service", slice_service),
            ),
            endpoints: reflect("", "endpoints", Writer::new()),
        };
        let aggregation = Arc::new(Self {
            apiservices,
            services,
            identity,
            clients: Mutex::default(),
            discovery: Arc::default(),
            failed: Mutex::default(),
            tasks: Mutex::new(tasks),
        });
        let refresher = aggregation.discovery.run(Arc::downgrade(&aggregation));
        aggregation
            .tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(refresher);
        aggregation
    }

    /// The remote group/versions' discovery, as last fetched.
    pub fn discovery(&self) -> &discovery::RemoteDiscovery {
        &self.discovery
    }

    /// Notes that a request proxied to APIService `name`'s backend failed, so its next check
    /// comes at once rather than at its period.
    pub fn report_failure(&self, name: &str) {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string());
    }

    /// Whether a proxied request to APIService `name` failed since this was last asked.
    pub fn take_failure(&self, name: &str) -> bool {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name)
    }

    /// The APIServices, followed.
    pub fn apiservices(&self) -> &Store {
        &self.apiservices
    }

    /// The APIService of `group`/`version` when it names a Service.
    pub fn remote(&self, group: &str, version: &str) -> Option<Arc<Value>> {
        self.apiservices
            .get(None, &crate::apiservice::name_of(group, version))
            .filter(|a| is_remote(a))
    }

    /// The APIServices that name a Service.
    pub fn remotes(&self) -> Vec<Arc<Value>> {
        self.apiservices
            .state()
            .into_iter()
            .filter(|a| is_remote(a))
            .collect()
    }

    /// Where `apiservice`'s requests go now, and the client to send them with.
    ///
    /// # Errors
    /// The Service, its port or its endpoints are missing, or the `caBundle` does not parse.
    pub fn backend(&self, apiservice: &Value) -> Result<Backend, Unavailable> {
        let spec = &apiservice["spec"];
        let service = &spec["service"];
        let namespace = service["namespace"].as_str().unwrap_or_default();
        let name = service["name"].as_str().unwrap_or_default();
        let port = service["port"].as_i64().unwrap_or(443);
        let location = self.services.resolve(namespace, name, port)?;
        let client = self.client(apiservice, &format!("{name}.{namespace}.svc"))?;
        Ok(Backend { location, client })
    }

    fn client(&self, apiservice: &Value, server_name: &str) -> Result<BackendClient, Unavailable> {
        let spec = &apiservice["spec"];
        let built_from = serde_json::json!([
            spec["service"],
            spec["caBundle"],
            spec["insecureSkipTLSVerify"]
        ]);
        let key = apiservice["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((from, client)) = clients.get(&key) {
            if from == &built_from {
                return Ok(client.clone());
            }
        }
        let trust = if spec["insecureSkipTLSVerify"] == true {
            BackendTrust::Insecure
        } else {
            use base64::Engine as _;
            let pem = spec["caBundle"].as_str().unwrap_or_default();
            let pem = base64::engine::general_purpose::STANDARD
                .decode(pem)
                .map_err(|e| Unavailable {
                    reason: "FailedDiscoveryCheck",
                    message: format!("spec.caBundle is not base64: {e}"),
                })?;
            BackendTrust::CaBundle(pem)
        };
        let client =
            BackendClient::new(&trust, server_name, self.identity.as_ref()).map_err(|e| {
                Unavailable {
                    reason: "FailedDiscoveryCheck",
                    message: e.to_string(),
                }
            })?;
        // APIServices come and go; forget the clients of deleted ones.
        let live: Vec<String> = self
            .apiservices
            .state()
            .iter()
            .filter_map(|a| a["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        clients.retain(|name, _| live.contains(name));
        clients.insert(key, (built_from, client.clone()));
        Ok(client)
    }

    /// GETs `path` from `apiservice`'s backend as kube-aggregator asks its discovery
    /// (`system:kube-aggregator` in `system:masters`), within `timeout`: the status and body.
    ///
    /// # Errors
    /// The backend cannot be resolved or reached, or answers too much: Kubernetes' words
    /// (`failing or missing response from https://…: …`).
    pub async fn get(
        &self,
        apiservice: &Value,
        path: &str,
        timeout: Duration,
    ) -> Result<(u16, Bytes), Unavailable> {
        self.request(apiservice, hyper::Method::GET, path, timeout)
            .await
    }

    /// Sends `method` `path` to `apiservice`'s backend as the server itself
    /// (`system:kube-aggregator` in `system:masters`: discovery, and the namespace controller's
    /// deletions), within `timeout`: the status and body.
    ///
    /// # Errors
    /// As [`Aggregation::get`].
    pub async fn request(
        &self,
        apiservice: &Value,
        method: hyper::Method,
        path: &str,
        timeout: Duration,
    ) -> Result<(u16, Bytes), Unavailable> {
        let backend = self.backend(apiservice)?;
        let url = format!("{}{path}", backend.location.base_url());
        // Go's words for the method in an error (`Get "https://…": …`).
        let verb = match method.as_str() {
            "GET" => "Get".to_string(),
            "DELETE" => "Delete".to_string(),
            other => other.to_string(),
        };
        let failing = |why: String| Unavailable {
            reason: "FailedDiscoveryCheck",
            message: format!("failing or missing response from {url}: {why}"),
        };
        let request = hyper::Request::builder()
            .method(method)
            .uri(&url)
            .header("Accept", "application/json")
            .header("X-Remote-User", AGGREGATOR_USER)
            .header("X-Remote-Group", "system:masters")
            .body(
                Empty::<Bytes>::new()
                    .map_err(|never| match never {})
                    .boxed(),
            )
            .map_err(|e| failing(e.to_string()))?;
        let call = async {
            let response = backend
                .client
                .send(request)
                .await
                .map_err(|e| format!("{verb} {url:?}: {e}"))?;
            let status = response.status().as_u16();
            let body = Limited::new(response.into_body(), MAX_DISCOVERY_BYTES)
                .collect()
                .await
                .map_err(|e| format!("reading the response: {e}"))?
                .to_bytes();
            Ok::<_, String>((status, body))
        };
        match tokio::time::timeout(timeout, call).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(why)) => Err(failing(why)),
            Err(_) => Err(failing(format!(
                "{verb} {url:?}: context deadline exceeded"
            ))),
        }
    }
}

/// A body for a proxied request.
pub fn proxy_body<B>(body: B) -> ProxyBody
where
    B: hyper::body::Body<Data = Bytes> + Send + Sync + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    body.map_err(Into::into).boxed()
}
