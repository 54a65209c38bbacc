//! The discovery of aggregated APIs: each remote APIService's `/apis/{group}/{version}`
//! (`APIResourceList`), fetched in the background from its backend when it appears or
//! changes and again every minute (every 5 s while it fails), so discovery requests never wait on a backend. A fetch that
//! fails keeps what was fetched before, marked stale (kube-aggregator's `Stale` freshness).

use std::collections::HashMap;
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Aggregation;

/// How long a backend's discovery is trusted before it is fetched again.
const REFRESH: Duration = Duration::from_secs(60);
/// How soon a backend whose discovery failed is asked again.
const RETRY: Duration = Duration::from_secs(5);
/// How often the APIServices are looked over for ones not fetched yet.
const SCAN: Duration = Duration::from_secs(2);
/// How long a backend may take to answer its discovery.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// One remote group/version's resources as its backend last listed them.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteVersion {
    /// The backend's `APIResourceList.resources` (empty until a first fetch succeeds).
    pub resources: Vec<Value>,
    /// The last fetch failed (or none succeeded yet).
    pub stale: bool,
}

/// What was fetched of one APIService: for which spec, when, and the answer.
#[derive(Debug, Clone)]
struct Fetched {
    spec: Value,
    at: Instant,
    version: RemoteVersion,
}

/// The remote group/versions' discovery, by APIService name.
#[derive(Debug, Default)]
pub struct RemoteDiscovery {
    fetched: RwLock<HashMap<String, Fetched>>,
}

impl RemoteDiscovery {
    /// What is known of APIService `name` (`<version>.<group>`).
    pub fn version(&self, name: &str) -> Option<RemoteVersion> {
        let fetched = self.fetched.read().unwrap_or_else(|p| p.into_inner());
        fetched.get(name).map(|f| f.version.clone())
    }

    /// Keeps the discovery of `aggregation`'s remote APIServices fresh, for as long as it
    /// lives.
    pub(super) fn run(
        self: &Arc<Self>,
        aggregation: Weak<Aggregation>,
    ) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SCAN);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(aggregation) = aggregation.upgrade() else {
                    return;
                };
                this.refresh(&aggregation).await;
            }
        })
    }

    /// Fetches what is new, changed or due; forgets what is gone.
    async fn refresh(&self, aggregation: &Aggregation) {
        let remotes = aggregation.remotes();
        let due: Vec<Arc<Value>> = {
            let fetched = self.fetched.read().unwrap_or_else(|p| p.into_inner());
            remotes
                .iter()
                .filter(|a| {
                    let name = a["metadata"]["name"].as_str().unwrap_or_default();
                    match fetched.get(name) {
                        None => true,
                        Some(f) => {
                            let every = if f.version.stale { RETRY } else { REFRESH };
                            f.spec != a["spec"] || f.at.elapsed() >= every
                        }
                    }
                })
                .cloned()
                .collect()
        };
        let fetches = due.iter().map(|apiservice| async move {
            let spec = &apiservice["spec"];
            let path = format!(
                "/apis/{}/{}",
                spec["group"].as_str().unwrap_or_default(),
                spec["version"].as_str().unwrap_or_default()
            );
            let answer = aggregation.get(apiservice, &path, FETCH_TIMEOUT).await;
            let resources = match answer {
                Ok((200, body)) => serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|list| list["resources"].as_array().cloned()),
                Ok((code, _)) => {
                    tracing::debug!(%path, code, "an aggregated API's discovery failed");
                    None
                }
                Err(why) => {
                    tracing::debug!(%path, error = %why.message, "an aggregated API's discovery failed");
                    None
                }
            };
            (apiservice.clone(), resources)
        });
        let results = futures::future::join_all(fetches).await;
        let mut fetched = self.fetched.write().unwrap_or_else(|p| p.into_inner());
        for (apiservice, resources) in results {
            let name = apiservice["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let version = match (resources, fetched.get(&name)) {
                (Some(resources), _) => RemoteVersion {
                    resources,
                    stale: false,
                },
                // Kept, marked stale, for as long as the backend does not answer.
                (None, Some(before)) => RemoteVersion {
                    resources: before.version.resources.clone(),
                    stale: true,
                },
                (None, None) => RemoteVersion {
                    resources: Vec::new(),
                    stale: true,
                },
            };
            fetched.insert(
                name,
                Fetched {
                    spec: apiservice["spec"].clone(),
                    at: Instant::now(),
                    version,
                },
            );
        }
        let live: Vec<String> = remotes
            .iter()
            .filter_map(|a| a["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        fetched.retain(|name, _| live.contains(name));
    }
}
