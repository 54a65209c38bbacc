//! APIService availability (kube-aggregator's `AvailableConditionController`): every
//! APIService that names a Service is checked — its Service, port and ready endpoints, then a
//! GET of `/apis/{group}/{version}` from its backend within 5 s — when it appears or changes,
//! every 5 s while unavailable, every 30 s while available and at once after a proxied request
//! to it failed; its `Available` condition says
//! the outcome in Kubernetes' reasons (`Passed`, `ServiceNotFound`, `ServicePortError`,
//! `EndpointsNotFound`, `MissingEndpoints`, `FailedDiscoveryCheck`). The proxy serves only
//! available APIServices.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::task::JoinSet;

use super::metrics::ControllerMetrics;
use strategy_host_registry::aggregation::backend::Unavailable;
use strategy_host_registry::aggregation::{is_remote, Aggregation};
use strategy_host_registry::apiservice::{GROUP, PLURAL};
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::system_fields::{meta_str, set_condition};
use strategy_host_registry::Registry;

/// Who the controller acts as.
const MANAGER: &str = "apiservice-availability-controller";
/// How long a backend's discovery may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often an available APIService is checked again.
const AVAILABLE_RECHECK: Duration = Duration::from_secs(30);
/// How often an unavailable one is.
const UNAVAILABLE_RECHECK: Duration = Duration::from_secs(5);
/// How often the APIServices are looked over.
const SCAN: Duration = Duration::from_secs(1);

/// The `Available` condition of one check: (status, reason, message).
type Verdict = (&'static str, &'static str, String);

/// Checks `apiservice`'s backend.
async fn check(aggregation: &Aggregation, apiservice: &Value) -> Verdict {
    let spec = &apiservice["spec"];
    let path = format!(
        "/apis/{}/{}",
        spec["group"].as_str().unwrap_or_default(),
        spec["version"].as_str().unwrap_or_default()
    );
    match aggregation.get(apiservice, &path, PROBE_TIMEOUT).await {
        Ok((code, _)) if (200..300).contains(&code) => {
            ("True", "Passed", "all checks passed".to_string())
        }
        Ok((code, _)) => {
            let url = aggregation
                .backend(apiservice)
                .map(|b| format!("{}{path}", b.location.base_url()))
                .unwrap_or(path);
            (
                "False",
                "FailedDiscoveryCheck",
                format!("failing or missing response from {url}: bad status from {url}: {code}"),
            )
        }
        Err(Unavailable { reason, message }) => ("False", reason, message),
    }
}

/// The `Available` condition `apiservice` has now, as a verdict.
fn current(apiservice: &Value) -> Option<Verdict> {
    let condition = apiservice
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Available")?;
    let status = if condition["status"] == "True" {
        "True"
    } else {
        "False"
    };
    let reason = condition["reason"].as_str().unwrap_or_default();
    let reason = [
        "Passed",
        "ServiceNotFound",
        "ServicePortError",
        "EndpointsNotFound",
        "MissingEndpoints",
        "FailedDiscoveryCheck",
    ]
    .into_iter()
    .find(|r| *r == reason)
    .unwrap_or("");
    Some((
        status,
        reason,
        condition["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    ))
}

/// The gauge of APIService `name`.
fn name_label(name: &str) -> Vec<(String, String)> {
    vec![("name".to_string(), name.to_string())]
}

/// Runs the controller until the returned set is dropped, recording which APIServices are
/// unavailable in `metrics`.
pub fn start(
    registry: &Arc<Registry>,
    aggregation: Arc<Aggregation>,
    metrics: ControllerMetrics,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let client = Client::new(registry, MANAGER);
    tasks.spawn(async move {
        aggregation.apiservices().wait_until_ready().await;
        // APIService name → (the spec checked, when).
        let mut checked: HashMap<String, (Value, Instant)> = HashMap::new();
        let mut tick = tokio::time::interval(SCAN);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let remotes: Vec<Arc<Value>> = aggregation
                .apiservices()
                .state()
                .into_iter()
                .filter(|a| is_remote(a))
                .collect();
            checked.retain(|name, _| {
                let live = remotes.iter().any(|a| meta_str(a, "name") == Some(name));
                if !live {
                    metrics.unavailable_apiservices.remove(&name_label(name));
                }
                live
            });
            for apiservice in remotes {
                let name = meta_str(&apiservice, "name").unwrap_or_default().to_string();
                let now = current(&apiservice);
                let due = match checked.get(&name) {
                    None => true,
                    Some((spec, at)) => {
                        let every = match &now {
                            Some(("True", ..)) => AVAILABLE_RECHECK,
                            _ => UNAVAILABLE_RECHECK,
                        };
                        spec != &apiservice["spec"] || at.elapsed() >= every
                    }
                } | aggregation.take_failure(&name);
                if !due {
                    continue;
                }
                checked.insert(name.clone(), (apiservice["spec"].clone(), Instant::now()));
                let verdict = check(&aggregation, &apiservice).await;
                metrics
                    .unavailable_apiservices
                    .get_or_create(&name_label(&name))
                    .set(i64::from(verdict.0 != "True"));
                if now.as_ref() == Some(&verdict) {
                    continue;
                }
                if let Err(e) = record(&client, &apiservice, verdict).await {
                    tracing::warn!(apiservice = %name, error = %e, "could not record an APIService's availability");
                    checked.remove(&name);
                }
            }
        }
    });
    tasks
}

/// Writes `verdict` as `apiservice`'s `Available` condition (the transition time moves only
/// when the status does).
async fn record(
    client: &Client,
    apiservice: &Value,
    verdict: Verdict,
) -> strategy_host_registry::Result<()> {
    let name = meta_str(apiservice, "name").unwrap_or_default();
    let uid = meta_str(apiservice, "uid").unwrap_or_default();
    let (status, reason, message) = verdict;
    tracing::info!(apiservice = %name, status, reason, %message, "APIService availability");
    let target = ObjectRef::new(GROUP, "v1", PLURAL, None, name);
    client
        .update(&target, uid, Some("status"), move |o| {
            if o["spec"]["service"].is_null() {
                return false;
            }
            set_condition(
                o,
                json!({"type": "Available", "status": status, "reason": reason, "message": message}),
            )
        })
        .await
}
