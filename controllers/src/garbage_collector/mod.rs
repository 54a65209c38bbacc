//! The garbage collector, with Kubernetes' semantics: an object whose owners (by uid) are all
//! gone is deleted; one with owners left loses only its dangling references; an owner deleted
//! with `propagationPolicy: Foreground` (the `foregroundDeletion` finalizer) has its
//! dependents deleted and goes once none with `blockOwnerDeletion` remains; one deleted with
//! `Orphan` (the `orphan` finalizer) has the references to it removed first.
//!
//! It follows every served resource through the informer (resources come and go with their
//! definitions), keeps the ownership [`graph::Graph`], and acts through the registry's verbs.
//! An owner the graph does not know is looked up live before anything is deleted for it.

mod edits;
mod follow;
pub mod graph;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinSet;

use self::edits::{drop_finalizer, drop_owner_references, unblock};
use self::graph::{Graph, Node, OwnerReference, Uid};
use super::events::{EventRecorder, InvolvedObject};
use super::metrics::ControllerMetrics;
use super::queue::WorkQueue;
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::system_fields::meta_str;
use strategy_host_registry::Preconditions;
use strategy_host_registry::{Registry, Result, FOREGROUND_DELETION, ORPHAN};

/// Objects worked on at once (kube-controller-manager's `--concurrent-gc-syncs` is 20).
const WORKERS: usize = 16;

/// Owners known to be gone, remembered so their other dependents need no live lookup
/// (Kubernetes' collector keeps the same cache).
const ABSENT_OWNERS_REMEMBERED: usize = 4096;

/// A bounded set of uids, the oldest forgotten first.
#[derive(Debug, Default)]
struct AbsentOwners {
    order: std::collections::VecDeque<Uid>,
    set: HashSet<Uid>,
}

impl AbsentOwners {
    fn insert(&mut self, uid: &str) {
        if self.set.insert(uid.to_string()) {
            self.order.push_back(uid.to_string());
            if self.order.len() > ABSENT_OWNERS_REMEMBERED {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }

    fn contains(&self, uid: &str) -> bool {
        self.set.contains(uid)
    }
}

/// What an owner reference points at, as the collector judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnerState {
    /// The owner exists.
    Solid,
    /// The owner exists and waits for its dependents (a foreground deletion).
    Waiting,
    /// No owner with that uid exists where the reference points.
    Dangling,
    /// The reference cannot be resolved (kind not served, or a namespaced owner of a
    /// cluster-scoped object): never acted on.
    Unresolvable,
}

/// The collector's shared state.
struct Collector {
    client: Client,
    events: EventRecorder,
    graph: Mutex<Graph>,
    queue: Arc<WorkQueue<Uid>>,
    /// (dependent, owner) pairs already reported as invalid.
    reported: Mutex<HashSet<(Uid, Uid)>>,
    /// Owners seen deleted or looked up and not found.
    absent: Mutex<AbsentOwners>,
    metrics: ControllerMetrics,
}

/// Runs the garbage collector over `registry` until the returned set is dropped.
pub fn start(registry: &Arc<Registry>, metrics: ControllerMetrics) -> JoinSet<()> {
    let client = Client::new(registry, "generic-garbage-collector");
    let collector = Arc::new(Collector {
        events: EventRecorder::new(client.clone(), "garbage-collector-controller"),
        client,
        graph: Mutex::default(),
        queue: WorkQueue::new(),
        reported: Mutex::default(),
        absent: Mutex::default(),
        metrics,
    });
    let (synced_tx, synced) = watch::channel(false);
    let mut tasks = JoinSet::new();
    tasks.spawn(follow::follow(
        collector.clone(),
        registry.clone(),
        synced_tx,
    ));
    for _ in 0..WORKERS {
        let (collector, mut synced) = (collector.clone(), synced.clone());
        tasks.spawn(async move {
            // Decisions wait for the first full picture, as Kubernetes' collector does.
            if synced.wait_for(|s| *s).await.is_err() {
                return;
            }
            loop {
                let uid = collector.queue.next().await;
                let metrics = &collector.metrics;
                metrics.gc_attempts.inc();
                metrics.gc_queue_depth.set(gauge(collector.queue.len()));
                metrics
                    .gc_graph_objects
                    .set(gauge(collector.lock_graph().len()));
                match collector.sync(&uid).await {
                    Ok(()) => collector.queue.done(&uid),
                    Err(e) => {
                        metrics.gc_failures.inc();
                        tracing::debug!(%uid, error = %e, "garbage collection retried");
                        collector.queue.retry(uid);
                    }
                }
            }
        });
    }
    drop(synced);
    tasks
}

impl Collector {
    fn lock_graph(&self) -> std::sync::MutexGuard<'_, Graph> {
        self.graph.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_absent(&self) -> std::sync::MutexGuard<'_, AbsentOwners> {
        self.absent.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake(&self, uids: Vec<Uid>) {
        for uid in uids {
            self.queue.add(uid);
        }
    }

    /// Records an object of the resource `key`; answers its uid.
    fn observe(&self, key: &(String, String), obj: &Value) -> Option<Uid> {
        let (uid, node) = Node::of(&key.0, &key.1, obj)?;
        let woken = self.lock_graph().observe(uid.clone(), node);
        self.wake(woken);
        Some(uid)
    }

    /// Looks at one object: as an owner being deleted, then as a dependent.
    async fn sync(&self, uid: &str) -> Result<()> {
        let Some(node) = self.lock_graph().node(uid).cloned() else {
            return Ok(());
        };
        if node.orphaning {
            return self.orphan_dependents(uid, &node).await;
        }
        if node.deleting_dependents {
            return self.delete_dependents(uid, &node).await;
        }
        if node.deleting || node.owners.is_empty() {
            return Ok(());
        }
        self.collect(uid, &node).await
    }

    /// `Orphan`: every dependent loses its references to `uid`; then the owner's `orphan`
    /// finalizer goes (and with it, the owner).
    async fn orphan_dependents(&self, uid: &str, owner: &Node) -> Result<()> {
        let dependents = self.lock_graph().dependents(uid);
        for dependent in dependents {
            let Some(node) = self.lock_graph().node(&dependent).cloned() else {
                continue;
            };
            let owner_uid = uid.to_string();
            self.client
                .update(&object_of(&node), &dependent, None, move |obj| {
                    drop_owner_references(obj, |r| r["uid"] == owner_uid.as_str())
                })
                .await?;
        }
        self.client
            .update(&object_of(owner), uid, None, |obj| {
                drop_finalizer(obj, ORPHAN)
            })
            .await
    }

    /// `Foreground`: the dependents are deleted; the owner's `foregroundDeletion` finalizer
    /// goes once no dependent that blocks it remains.
    async fn delete_dependents(&self, uid: &str, owner: &Node) -> Result<()> {
        let (dependents, blocking) = {
            let graph = self.lock_graph();
            let dependents: Vec<(Uid, Node)> = graph
                .dependents(uid)
                .into_iter()
                .filter_map(|d| graph.node(&d).cloned().map(|n| (d, n)))
                .collect();
            let blocking = dependents
                .iter()
                .filter(|(_, n)| {
                    n.owners
                        .iter()
                        .any(|r| r.uid == uid && r.block_owner_deletion)
                })
                .count();
            (dependents, blocking)
        };
        for (dependent, node) in dependents {
            if !node.deleting {
                self.queue.add(dependent);
            }
        }
        if blocking > 0 {
            // Woken again as each dependent goes.
            return Ok(());
        }
        self.client
            .update(&object_of(owner), uid, None, |obj| {
                drop_finalizer(obj, FOREGROUND_DELETION)
            })
            .await
    }

    /// A dependent: deleted when no owner is left, its dangling references removed when some
    /// are.
    async fn collect(&self, uid: &str, node: &Node) -> Result<()> {
        let mut states = Vec::with_capacity(node.owners.len());
        for owner in &node.owners {
            states.push((owner, self.owner_state(uid, node, owner).await?));
        }
        let of = |wanted: OwnerState| -> HashSet<&str> {
            states
                .iter()
                .filter(|(_, s)| *s == wanted)
                .map(|(r, _)| r.uid.as_str())
                .collect()
        };
        let (dangling, waiting) = (of(OwnerState::Dangling), of(OwnerState::Waiting));
        let kept = states
            .iter()
            .any(|(_, s)| matches!(s, OwnerState::Solid | OwnerState::Unresolvable));
        let object = object_of(node);
        if kept {
            if dangling.is_empty() && waiting.is_empty() {
                return Ok(());
            }
            let gone: HashSet<String> = dangling.union(&waiting).map(|s| s.to_string()).collect();
            return self
                .client
                .update(&object, uid, None, move |obj| {
                    drop_owner_references(obj, |r| {
                        r["uid"].as_str().is_some_and(|u| gone.contains(u))
                    })
                })
                .await;
        }
        let (has_dependents, in_cycle) = {
            let graph = self.lock_graph();
            let dependents = graph.dependents(uid);
            let in_cycle = dependents
                .iter()
                .any(|d| graph.node(d).is_some_and(|n| n.deleting_dependents));
            (!dependents.is_empty(), in_cycle)
        };
        let policy = if !waiting.is_empty() && has_dependents {
            if in_cycle {
                // A dependent of this object waits for its own dependents too: let go of the
                // waiting owners first, or a cycle of blocking references waits forever (the
                // same guard as Kubernetes', with its false positives).
                let waiting: HashSet<String> = waiting.iter().map(|s| s.to_string()).collect();
                self.client
                    .update(&object, uid, None, move |obj| unblock(obj, &waiting))
                    .await?;
            }
            "Foreground"
        } else {
            "Background"
        };
        self.client
            .delete(&object, Preconditions::uid(uid), Some(policy))
            .await?;
        self.metrics.gc_deletions.inc();
        Ok(())
    }

    /// Judges one owner reference of the dependent `uid`.
    async fn owner_state(
        &self,
        uid: &str,
        node: &Node,
        owner: &OwnerReference,
    ) -> Result<OwnerState> {
        let (group, version) = owner.group_version();
        let Some(registry) = self.client.registry() else {
            return Ok(OwnerState::Unresolvable);
        };
        let Some(served) = registry.resolve_kind(group, version, &owner.kind) else {
            return Ok(OwnerState::Unresolvable);
        };
        let namespace = if served.def.namespaced {
            if node.namespace.is_none() {
                self.report_invalid(uid, node, owner, "").await;
                return Ok(OwnerState::Unresolvable);
            }
            node.namespace.clone()
        } else {
            None
        };
        let known = self.lock_graph().node(&owner.uid).cloned();
        if let Some(known) = &known {
            if known.name == owner.name && known.namespace == namespace {
                return Ok(state_of(known));
            }
            if known.namespace != namespace {
                let ns = namespace.clone().unwrap_or_default();
                self.report_invalid(uid, node, owner, &ns).await;
            }
        }
        if self.lock_absent().contains(&owner.uid) {
            return Ok(OwnerState::Dangling);
        }
        let object = ObjectRef {
            group: served.def.group.clone(),
            version: version.to_string(),
            plural: served.def.plural.clone(),
            namespace,
            name: owner.name.clone(),
        };
        let live = self.client.get(&object).await?;
        Ok(match live {
            Some(obj) if meta_str(&obj, "uid") == Some(owner.uid.as_str()) => {
                Node::of(&object.group, &object.plural, &obj)
                    .map_or(OwnerState::Solid, |(_, n)| state_of(&n))
            }
            _ => {
                self.lock_absent().insert(&owner.uid);
                OwnerState::Dangling
            }
        })
    }

    /// A Warning Event (`OwnerRefInvalidNamespace`) on a dependent whose owner reference
    /// points where no owner can be, once per reference.
    async fn report_invalid(
        &self,
        uid: &str,
        node: &Node,
        owner: &OwnerReference,
        namespace: &str,
    ) {
        let fresh = self
            .reported
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((uid.to_string(), owner.uid.clone()));
        if !fresh {
            return;
        }
        let message = format!(
            "ownerRef [{}/{}, namespace: {}, name: {}, uid: {}] does not exist in namespace {:?}",
            owner.api_version, owner.kind, namespace, owner.name, owner.uid, namespace
        );
        let object = object_of(node);
        let involved = InvolvedObject {
            object: &object,
            kind: &node.kind,
            uid,
        };
        self.events
            .post(&involved, "Warning", "OwnerRefInvalidNamespace", &message)
            .await;
    }
}

fn gauge(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn state_of(owner: &Node) -> OwnerState {
    if owner.deleting_dependents {
        OwnerState::Waiting
    } else {
        OwnerState::Solid
    }
}

fn object_of(node: &Node) -> ObjectRef {
    ObjectRef {
        group: node.group.clone(),
        version: node.version.clone(),
        plural: node.plural.clone(),
        namespace: node.namespace.clone(),
        name: node.name.clone(),
    }
}
