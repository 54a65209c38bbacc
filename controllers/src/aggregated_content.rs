//! A terminating namespace's content served by extension API servers (the namespace
//! controller's aggregated half): each remote APIService's namespaced resources, as its
//! backend's discovery lists them, deleted with `deletecollection` and counted with `list`
//! through the backend. A group whose APIService is unavailable, or whose discovery is stale,
//! cannot be emptied: it is reported as Kubernetes reports it, and the namespace waits.

use std::time::Duration;

use serde_json::Value;

use super::collection_deletion::Remaining;
use strategy_host_registry::aggregation::{is_available, Aggregation, Method};

/// How long one call to a backend may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Deletes what the extension servers hold in `namespace`, noting what remains in `remaining`;
/// answers the group/versions whose discovery failed.
pub(super) async fn delete(
    aggregation: &Aggregation,
    namespace: &str,
    remaining: &mut Remaining,
) -> Vec<String> {
    let mut failed_discovery = Vec::new();
    for apiservice in aggregation.remotes() {
        let spec = &apiservice["spec"];
        let (group, version) = (
            spec["group"].as_str().unwrap_or_default(),
            spec["version"].as_str().unwrap_or_default(),
        );
        let name = apiservice["metadata"]["name"].as_str().unwrap_or_default();
        let discovered = aggregation.discovery().version(name);
        let Some(discovered) = discovered.filter(|d| !d.stale && is_available(&apiservice)) else {
            failed_discovery.push(format!("{group}/{version}"));
            continue;
        };
        for resource in &discovered.resources {
            let plural = resource["name"].as_str().unwrap_or_default();
            if resource["namespaced"] != true || plural.is_empty() || plural.contains('/') {
                continue;
            }
            let can = |verb: &str| {
                resource["verbs"]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|x| x == verb))
            };
            let path = format!("/apis/{group}/{version}/namespaces/{namespace}/{plural}");
            let qualified = format!("{plural}.{group}");
            if can("deletecollection") {
                match aggregation
                    .request(&apiservice, Method::DELETE, &path, CALL_TIMEOUT)
                    .await
                {
                    Ok((code, _)) if (200..300).contains(&code) || code == 404 => {}
                    Ok((code, body)) => remaining.failures.push(format!(
                        "{qualified}: {code} {}",
                        String::from_utf8_lossy(&body)
                    )),
                    Err(why) => remaining
                        .failures
                        .push(format!("{qualified}: {}", why.message)),
                }
            }
            if can("deletecollection") && can("list") {
                match aggregation.get(&apiservice, &path, CALL_TIMEOUT).await {
                    Ok((200, body)) => {
                        let left = serde_json::from_slice::<Value>(&body)
                            .ok()
                            .and_then(|l| l["items"].as_array().map(Vec::len))
                            .unwrap_or(0);
                        if left > 0 {
                            remaining.objects.insert(qualified, left);
                        }
                    }
                    Ok(_) | Err(_) => remaining.failures.push(format!(
                        "{qualified}: the remaining objects could not be listed"
                    )),
                }
            }
        }
    }
    failed_discovery
}

/// Kubernetes' message of `NamespaceDeletionDiscoveryFailure` for `failed` group/versions.
pub(super) fn discovery_message(failed: &[String]) -> String {
    let each: Vec<String> = failed
        .iter()
        .map(|gv| format!("{gv}: stale GroupVersion discovery: {gv}"))
        .collect();
    format!(
        "Discovery failed for some groups, {} failing: unable to retrieve the complete list of server APIs: {}",
        failed.len(),
        each.join(", ")
    )
}
