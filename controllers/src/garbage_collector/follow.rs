//! The collector's view of the cluster: the registry-level watch of every served resource at
//! its storage version (started and stopped as definitions come and go), feeding the ownership
//! graph; decisions wait until every resource was listed once.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::graph::Uid;
use super::Collector;
use strategy_host_registry::follow::Event;
use strategy_host_registry::Registry;

/// The informers' events, tagged with the resource they come from.
type Tagged = (String, String, Event);

/// Follows every served resource (starting and stopping informers as definitions come and
/// go) and keeps the graph; marks the collector synced once every resource was listed.
pub(super) async fn follow(
    collector: Arc<Collector>,
    registry: Arc<Registry>,
    synced: watch::Sender<bool>,
) {
    let weak = Arc::downgrade(&registry);
    let mut changes = registry.subscribe_changes();
    drop(registry);
    let (tx, mut rx) = mpsc::channel::<Tagged>(4096);
    let mut followed: HashMap<(String, String), tokio::task::AbortHandle> = HashMap::new();
    let mut informers = JoinSet::new();
    let mut unlisted: HashSet<(String, String)> = HashSet::new();
    let mut listing: HashMap<(String, String), HashSet<Uid>> = HashMap::new();
    let mut reconcile = true;
    loop {
        if reconcile {
            let Some(registry) = weak.upgrade() else {
                return;
            };
            let wanted: HashMap<(String, String), _> = registry
                .resources()
                .into_iter()
                .filter(|r| !r.def.create_only && r.def.stored_as.is_none())
                .map(|r| ((r.def.group.clone(), r.def.plural.clone()), r))
                .collect();
            followed.retain(|key, handle| {
                let keep = wanted.contains_key(key);
                if !keep {
                    handle.abort();
                    let mut graph = collector.lock_graph();
                    for uid in graph.uids_of(&key.0, &key.1) {
                        let woken = graph.forget(&uid);
                        collector.wake(woken);
                    }
                }
                keep
            });
            for (key, served) in wanted {
                if followed.contains_key(&key) {
                    continue;
                }
                let mut events = Box::pin(served.follow_stored());
                let tx = tx.clone();
                let tag = key.clone();
                let handle = informers.spawn(async move {
                    while let Some(event) = events.next().await {
                        if tx
                            .send((tag.0.clone(), tag.1.clone(), event))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                });
                if !*synced.borrow() {
                    unlisted.insert(key.clone());
                }
                followed.insert(key, handle);
            }
            reconcile = false;
        }
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                reconcile = true;
            }
            Some((group, plural, event)) = rx.recv() => {
                let key = (group, plural);
                match event {
                    Event::Init => {
                        listing.insert(key.clone(), HashSet::new());
                    }
                    Event::InitApply(obj) => {
                        let uid = collector.observe(&key, &obj.to_value());
                        if let (Some(uid), Some(seen)) = (uid, listing.get_mut(&key)) {
                            seen.insert(uid);
                        }
                    }
                    Event::InitDone => {
                        let seen = listing.remove(&key).unwrap_or_default();
                        let mut graph = collector.lock_graph();
                        for uid in graph.uids_of(&key.0, &key.1) {
                            if !seen.contains(&uid) {
                                let woken = graph.forget(&uid);
                                collector.wake(woken);
                            }
                        }
                        drop(graph);
                        unlisted.remove(&key);
                        if unlisted.is_empty() {
                            synced.send_if_modified(|s| !std::mem::replace(s, true));
                        }
                    }
                    Event::Apply(obj) => {
                        collector.observe(&key, &obj.to_value());
                    }
                    Event::Delete(obj) => {
                        if let Some(uid) = obj.to_value().pointer("/metadata/uid").and_then(Value::as_str) {
                            collector.lock_absent().insert(uid);
                            let woken = collector.lock_graph().forget(uid);
                            collector.wake(woken);
                        }
                    }
                }
            }
        }
    }
}
