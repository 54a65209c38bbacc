//! The reflector store: a follower's copy of one resource, kept by one [`Writer`] from the
//! registry-level watch's events and read through cloneable [`Store`] handles (kube-rs's
//! `reflector::store`), by name and by the indexes the follower declared.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use serde_json::Value;
use tokio::sync::watch;

use super::event::Event;

/// The values an index files an object under.
pub type Indexer = fn(&Value) -> Vec<String>;

/// An object's key: `namespace/name`, or `name` for a cluster-scoped object (client-go's
/// `MetaNamespaceKeyFunc`).
fn key_of(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}

fn object_key(obj: &Value) -> String {
    let text = |p: &str| obj.pointer(p).and_then(Value::as_str);
    key_of(
        text("/metadata/namespace"),
        text("/metadata/name").unwrap_or_default(),
    )
}

#[derive(Default)]
struct State {
    objects: BTreeMap<String, Arc<Value>>,
    indexers: Vec<(&'static str, Indexer)>,
    /// Index name → value → keys of the objects filed under it.
    indexes: BTreeMap<&'static str, BTreeMap<String, BTreeSet<String>>>,
}

impl State {
    fn insert(&mut self, key: String, obj: Arc<Value>) {
        self.remove(&key);
        for (name, indexer) in &self.indexers {
            let index = self.indexes.entry(name).or_default();
            for value in indexer(&obj) {
                index.entry(value).or_default().insert(key.clone());
            }
        }
        self.objects.insert(key, obj);
    }

    fn remove(&mut self, key: &str) {
        let Some(old) = self.objects.remove(key) else {
            return;
        };
        for (name, indexer) in &self.indexers {
            let Some(index) = self.indexes.get_mut(name) else {
                continue;
            };
            for value in indexer(&old) {
                if let Some(keys) = index.get_mut(&value) {
                    keys.remove(key);
                    if keys.is_empty() {
                        index.remove(&value);
                    }
                }
            }
        }
    }

    fn replace(&mut self, objects: BTreeMap<String, Arc<Value>>) {
        self.objects.clear();
        self.indexes.clear();
        for (key, obj) in objects {
            self.insert(key, obj);
        }
    }
}

/// The one writer of a store: applies the registry-level watch's events.
pub struct Writer {
    store: Store,
    /// The objects of the (re)list in progress, which replace the store at its end.
    listing: Option<BTreeMap<String, Arc<Value>>>,
    ready: watch::Sender<bool>,
}

impl Default for Writer {
    fn default() -> Self {
        let (ready, ready_rx) = watch::channel(false);
        Self {
            store: Store {
                state: Arc::default(),
                ready: ready_rx,
            },
            listing: None,
            ready,
        }
    }
}

impl Writer {
    /// A writer of an empty store, ready once its first list is in.
    pub fn new() -> Self {
        Self::default()
    }

    /// Files every object under the values `indexer` gives, in the index `name`.
    #[must_use]
    pub fn with_index(self, name: &'static str, indexer: Indexer) -> Self {
        self.write().indexers.push((name, indexer));
        self
    }

    /// A reader of the store.
    pub fn reader(&self) -> Store {
        self.store.clone()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.store.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one event; answers whether readers see a change (a list's end, a change; not a
    /// list in progress or a progress notice).
    pub fn apply(&mut self, event: &Event) -> bool {
        match event {
            Event::Init => {
                self.listing = Some(BTreeMap::new());
                false
            }
            Event::InitApply(o) => {
                let obj = o.to_value();
                self.listing
                    .get_or_insert_with(BTreeMap::new)
                    .insert(object_key(&obj), Arc::new(obj));
                false
            }
            Event::InitDone => {
                let listed = self.listing.take().unwrap_or_default();
                self.write().replace(listed);
                self.ready.send_if_modified(|r| !std::mem::replace(r, true));
                true
            }
            Event::Apply(o) => {
                let obj = o.to_value();
                self.write().insert(object_key(&obj), Arc::new(obj));
                true
            }
            Event::Delete(o) => {
                self.write().remove(&object_key(&o.to_value()));
                true
            }
        }
    }
}

/// A reader of a follower's copy; clones share it.
#[derive(Clone)]
pub struct Store {
    state: Arc<RwLock<State>>,
    ready: watch::Receiver<bool>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("objects", &self.len())
            .field("ready", &self.is_ready())
            .finish()
    }
}

/// A ready store of the given objects (a follower's copy built by hand, as tests do).
impl FromIterator<Value> for Store {
    fn from_iter<I: IntoIterator<Item = Value>>(objects: I) -> Self {
        let mut writer = Writer::new();
        writer.apply(&Event::Init);
        for obj in objects {
            writer.apply(&Event::InitApply(Arc::new(super::Object::new(obj))));
        }
        writer.apply(&Event::InitDone);
        writer.reader()
    }
}

impl Store {
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The object `name` (in `namespace`, for a namespaced resource).
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<Value>> {
        self.read().objects.get(&key_of(namespace, name)).cloned()
    }

    /// Every object, by namespace and name.
    pub fn state(&self) -> Vec<Arc<Value>> {
        self.read().objects.values().cloned().collect()
    }

    /// Every object, by namespace and name, as owned values (for code that takes `&[Value]`).
    pub fn values(&self) -> Vec<Value> {
        self.read()
            .objects
            .values()
            .map(|o| (**o).clone())
            .collect()
    }

    /// Every object by its key (`namespace/name`, or `name`).
    pub fn by_key(&self) -> BTreeMap<String, Arc<Value>> {
        self.read().objects.clone()
    }

    /// The objects the index `index` files under `value`.
    pub fn indexed(&self, index: &str, value: &str) -> Vec<Arc<Value>> {
        let state = self.read();
        let keys = state.indexes.get(index).and_then(|i| i.get(value));
        keys.into_iter()
            .flatten()
            .filter_map(|k| state.objects.get(k).cloned())
            .collect()
    }

    /// How many objects it holds.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the first list is in.
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Waits until the first list is in (forever, if its writer is gone before).
    pub async fn wait_until_ready(&self) {
        let mut ready = self.ready.clone();
        if ready.wait_for(|r| *r).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::follow::Object as SharedObject;

    fn object(namespace: &str, name: &str, team: &str) -> Arc<SharedObject> {
        Arc::new(SharedObject::new(json!({
            "metadata": {"namespace": namespace, "name": name, "labels": {"team": team}}
        })))
    }

    fn team(obj: &Value) -> Vec<String> {
        obj.pointer("/metadata/labels/team")
            .and_then(Value::as_str)
            .map(|t| vec![t.to_owned()])
            .unwrap_or_default()
    }

    fn names(objects: &[Arc<Value>]) -> Vec<&str> {
        objects
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect()
    }

    #[tokio::test]
    async fn a_list_replaces_the_copy_only_when_complete() {
        let mut writer = Writer::new().with_index("team", team);
        let store = writer.reader();
        assert!(!store.is_ready());
        assert!(!writer.apply(&Event::Init));
        assert!(!writer.apply(&Event::InitApply(object("a", "x", "red"))));
        assert!(store.is_empty(), "nothing shows before the list is done");
        assert!(writer.apply(&Event::InitDone));
        store.wait_until_ready().await;
        assert_eq!(store.get(Some("a"), "x").unwrap()["metadata"]["name"], "x");
        assert!(store.get(Some("b"), "x").is_none());
        // A relist drops what it no longer lists, from the indexes too.
        writer.apply(&Event::Init);
        writer.apply(&Event::InitApply(object("b", "y", "blue")));
        assert_eq!(
            names(&store.state()),
            ["x"],
            "the old copy serves meanwhile"
        );
        writer.apply(&Event::InitDone);
        assert_eq!(names(&store.state()), ["y"]);
        assert!(store.indexed("team", "red").is_empty());
        assert_eq!(names(&store.indexed("team", "blue")), ["y"]);
    }

    #[test]
    fn changes_and_deletes_keep_the_indexes() {
        let mut writer = Writer::new().with_index("team", team);
        let store = writer.reader();
        writer.apply(&Event::InitDone);
        writer.apply(&Event::Apply(object("a", "x", "red")));
        writer.apply(&Event::Apply(object("a", "y", "red")));
        assert_eq!(names(&store.indexed("team", "red")), ["x", "y"]);
        writer.apply(&Event::Apply(object("a", "x", "blue")));
        assert_eq!(names(&store.indexed("team", "red")), ["y"]);
        assert_eq!(names(&store.indexed("team", "blue")), ["x"]);
        assert!(writer.apply(&Event::Delete(object("a", "y", "red"))));
        assert!(store.indexed("team", "red").is_empty());
        assert_eq!(store.len(), 1);
    }
}
