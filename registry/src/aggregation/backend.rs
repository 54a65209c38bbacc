//! Where an APIService's requests go, resolved as kube-aggregator resolves it with
//! `--enable-aggregator-routing`: an ExternalName Service is its host; any other Service is a
//! ready address of its EndpointSlices (or, without slices, its Endpoints) on the port named
//! as the Service's port the APIService gives. Why not, in kube-aggregator's reasons and words.

use serde_json::Value;

use crate::follow::Store;

/// The label an EndpointSlice names its Service with.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Why an APIService's backend cannot be reached: a reason of its `Available` condition and
/// Kubernetes' message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// `ServiceNotFound`, `ServicePortError`, `EndpointsNotFound` or `MissingEndpoints`.
    pub reason: &'static str,
    /// What is missing.
    pub message: String,
}

/// An APIService's backend: the Service it names, reached at `host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The address (an endpoint's IP, or an ExternalName's host).
    pub host: String,
    /// The port.
    pub port: u16,
}

impl Location {
    /// `https://host:port` (IPv6 in brackets).
    pub fn base_url(&self) -> String {
        if self.host.contains(':') {
            format!("https://[{}]:{}", self.host, self.port)
        } else {
            format!("https://{}:{}", self.host, self.port)
        }
    }
}

/// The followed Services, EndpointSlices (indexed by [`slice_service`]) and Endpoints.
#[derive(Debug, Clone)]
pub struct ServiceStores {
    /// Services.
    pub services: Store,
    /// EndpointSlices, indexed `service` by `namespace/name`.
    pub slices: Store,
    /// Endpoints.
    pub endpoints: Store,
}

/// The index of an EndpointSlice: `namespace/service`.
pub fn slice_service(slice: &Value) -> Vec<String> {
    let namespace = slice.pointer("/metadata/namespace").and_then(Value::as_str);
    let service = slice
        .pointer("/metadata/labels")
        .and_then(|l| l.get(SERVICE_NAME_LABEL))
        .and_then(Value::as_str);
    match (namespace, service) {
        (Some(ns), Some(svc)) => vec![format!("{ns}/{svc}")],
        _ => Vec::new(),
    }
}

/// The number of the port named `name` (`""` for the one unnamed port) in `ports`, an
/// EndpointSlice's or an Endpoints subset's.
fn named_port(ports: &Value, name: &str) -> Option<u16> {
    ports
        .as_array()?
        .iter()
        .find(|p| p["name"].as_str().unwrap_or_default() == name)
        .and_then(|p| p["port"].as_i64())
        .and_then(|p| u16::try_from(p).ok())
}

/// The addresses of `slice`'s endpoints that are ready (`ready` unset counts as ready).
fn ready_addresses(slice: &Value) -> impl Iterator<Item = &str> {
    slice["endpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e.pointer("/conditions/ready") != Some(&Value::Bool(false)))
        .flat_map(|e| e["addresses"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
}

impl ServiceStores {
    /// Where Service `namespace`/`name`'s port `port` is served.
    ///
    /// # Errors
    /// What is missing, in kube-aggregator's words.
    pub fn resolve(&self, namespace: &str, name: &str, port: i64) -> Result<Location, Unavailable> {
        let service = self
            .services
            .get(Some(namespace), name)
            .ok_or_else(|| Unavailable {
                reason: "ServiceNotFound",
                message: format!("service/{name} in {namespace:?} is not present"),
            })?;
        let spec = &service["spec"];
        let as_port = |p: i64| u16::try_from(p).unwrap_or(443);
        if spec["type"] == "ExternalName" {
            return Ok(Location {
                host: spec["externalName"]
                    .as_str()
                    .unwrap_or_default()
                    .trim_end_matches('.')
                    .to_string(),
                port: as_port(port),
            });
        }
        let service_port = spec["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["port"].as_i64() == Some(port))
            .ok_or_else(|| Unavailable {
                reason: "ServicePortError",
                message: format!("service/{name} in {namespace:?} is not listening on port {port}"),
            })?;
        let port_name = service_port["name"].as_str().unwrap_or_default();
        let missing = || {
            Unavailable {
            reason: "MissingEndpoints",
            message: format!("endpoints for service/{name} in {namespace:?} have no addresses with port name {port_name:?}"),
        }
        };
        let slices = self
            .slices
            .indexed("service", &format!("{namespace}/{name}"));
        let mut candidates: Vec<Location> = Vec::new();
        if slices.is_empty() {
            let endpoints =
                self.endpoints
                    .get(Some(namespace), name)
                    .ok_or_else(|| Unavailable {
                        reason: "EndpointsNotFound",
                        message: format!(
                            "cannot find endpoints for service/{name} in {namespace:?}"
                        ),
                    })?;
            for subset in endpoints["subsets"].as_array().into_iter().flatten() {
                let Some(p) = named_port(&subset["ports"], port_name) else {
                    continue;
                };
                for address in subset["addresses"].as_array().into_iter().flatten() {
                    if let Some(ip) = address["ip"].as_str() {
                        candidates.push(Location {
                            host: ip.into(),
                            port: p,
                        });
                    }
                }
            }
        }
        for slice in &slices {
            let Some(p) = named_port(&slice["ports"], port_name) else {
                continue;
            };
            candidates.extend(ready_addresses(slice).map(|ip| Location {
                host: ip.into(),
                port: p,
            }));
        }
        if candidates.is_empty() {
            return Err(missing());
        }
        let pick = rand::random::<u64>() as usize % candidates.len();
        Ok(candidates.swap_remove(pick))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::follow::{Event, Object, Writer};

    fn store(objects: Vec<Value>, index: bool) -> Store {
        let mut writer = Writer::new();
        if index {
            writer = writer.with_index("service", slice_service);
        }
        let reader = writer.reader();
        writer.apply(&Event::Init);
        for obj in objects {
            writer.apply(&Event::InitApply(std::sync::Arc::new(Object::new(obj))));
        }
        writer.apply(&Event::InitDone);
        reader
    }

    fn stores(services: Vec<Value>, slices: Vec<Value>, endpoints: Vec<Value>) -> ServiceStores {
        ServiceStores {
            services: store(services, false),
            slices: store(slices, true),
            endpoints: store(endpoints, false),
        }
    }

    fn service(spec: Value) -> Value {
        json!({"metadata": {"namespace": "kube-system", "name": "metrics-server"}, "spec": spec})
    }

    #[test]
    fn a_ready_endpoint_on_the_named_port_is_chosen() {
        let s = stores(
            vec![service(
                json!({"ports": [{"name": "https", "port": 443, "targetPort": "https"}]}),
            )],
            vec![
                json!({"metadata": {"namespace": "kube-system", "name": "ms-1",
                "labels": {SERVICE_NAME_LABEL: "metrics-server"}},
                "ports": [{"name": "https", "port": 10250}],
                "endpoints": [{"addresses": ["10.0.0.9"], "conditions": {"ready": false}},
                              {"addresses": ["10.0.0.5"]}]}),
            ],
            vec![],
        );
        let at = s.resolve("kube-system", "metrics-server", 443).unwrap();
        assert_eq!(at.base_url(), "https://10.0.0.5:10250");
        assert_eq!(
            s.resolve("kube-system", "metrics-server", 80)
                .unwrap_err()
                .message,
            "service/metrics-server in \"kube-system\" is not listening on port 80"
        );
        assert_eq!(
            s.resolve("kube-system", "other", 443).unwrap_err().reason,
            "ServiceNotFound"
        );
    }

    #[test]
    fn endpoints_serve_when_there_are_no_slices_and_external_names_are_their_host() {
        let s = stores(
            vec![service(json!({"ports": [{"port": 443}]}))],
            vec![],
            vec![
                json!({"metadata": {"namespace": "kube-system", "name": "metrics-server"},
                "subsets": [{"addresses": [{"ip": "fd00::5"}], "ports": [{"port": 8443}]}]}),
            ],
        );
        assert_eq!(
            s.resolve("kube-system", "metrics-server", 443)
                .unwrap()
                .base_url(),
            "https://[fd00::5]:8443"
        );
        let none = stores(
            vec![service(json!({"ports": [{"port": 443}]}))],
            vec![],
            vec![],
        );
        assert_eq!(
            none.resolve("kube-system", "metrics-server", 443)
                .unwrap_err()
                .reason,
            "EndpointsNotFound"
        );
        let empty = stores(
            vec![service(json!({"ports": [{"name": "https", "port": 443}]}))],
            vec![
                json!({"metadata": {"namespace": "kube-system", "name": "ms-1",
                "labels": {SERVICE_NAME_LABEL: "metrics-server"}},
                "ports": [{"name": "https", "port": 10250}], "endpoints": []}),
            ],
            vec![],
        );
        assert_eq!(
            empty.resolve("kube-system", "metrics-server", 443).unwrap_err().message,
            "endpoints for service/metrics-server in \"kube-system\" have no addresses with port name \"https\""
        );
        let external = stores(
            vec![service(
                json!({"type": "ExternalName", "externalName": "metrics.example.com."}),
            )],
            vec![],
            vec![],
        );
        assert_eq!(
            external
                .resolve("kube-system", "metrics-server", 443)
                .unwrap()
                .base_url(),
            "https://metrics.example.com:443"
        );
    }
}
