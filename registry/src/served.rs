//! `Registry`: the table of served resources. Built-in resources are always there; custom
//! resources follow a watch on the CustomResourceDefinition prefix, so every replica sharing a
//! store serves the same set, and a definition's change is served as soon as the watch sees it.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::Value;
use tokio::sync::watch;

use super::admission::AdmissionChain;
use super::definition::ResourceDefinition;
use super::store::RegistryStore;
use crate::strategy::{Strategy, StrategyResolver};
use crate::system_fields::meta_str;
use strategy_host_storage::cacher::{Cacher, CacherConfig, CacherStats};
use strategy_host_storage::informer::InformerEvent;
use strategy_host_storage::Storage;

/// One served resource: its definition and its store.
#[derive(Debug, Clone)]
pub struct ServedResource {
    /// The definition.
    pub def: Arc<ResourceDefinition>,
    /// The store.
    pub store: RegistryStore,
}

/// The storage of one resource: the one place a resource's store gets its cache (and the
/// cache, when it has one, for its statistics).
fn resource_storage(
    base: &Arc<dyn Storage>,
    prefix: &str,
) -> (Arc<dyn Storage>, Option<Arc<Cacher>>) {
    match Cacher::new(base.clone(), prefix, CacherConfig::default()) {
        Ok(cacher) => (cacher.clone(), Some(cacher)),
        Err(e) => {
            tracing::warn!(%prefix, error = %e, "no cache for this resource; serving from the store");
            (base.clone(), None)
        }
    }
}

#[derive(Default)]
struct Table {
    /// (group, plural) → resource.
    resources: BTreeMap<(String, String), ServedResource>,
    /// Storage per key prefix, kept across definition updates so caches survive them.
    storages: BTreeMap<String, Arc<dyn Storage>>,
    /// The watch cache of each prefix that has one.
    caches: BTreeMap<String, Arc<Cacher>>,
}

/// The served resources.
pub struct Registry {
    base: Arc<dyn Storage>,
    resolver: Arc<dyn StrategyResolver>,
    table: RwLock<Table>,
    observed: watch::Sender<u64>,
    synced: watch::Sender<bool>,
    /// Bumped whenever the set of served resources changes (controllers follow it).
    generation: watch::Sender<u64>,
    /// The validating admission every store's writes pass.
    admission: Arc<AdmissionChain>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("resources", &self.resources().len())
            .finish()
    }
}

impl Registry {
    /// A registry over the embedded store at `path` (opened, or made when absent) serving the
    /// [`Core`](crate::kinds::Core) kinds and the [`ModuleKinds`](crate::kinds::ModuleKinds):
    /// a server of one process, as tests run it.
    ///
    /// # Errors
    /// The store cannot be opened.
    pub async fn open_embedded(
        path: &std::path::Path,
        resolver: Arc<dyn StrategyResolver>,
    ) -> Result<Arc<Self>, strategy_host_storage::StorageError> {
        use strategy_host_storage::embedded::{EmbeddedConfig, EmbeddedStore};
        let store = EmbeddedStore::open(EmbeddedConfig::new(path)).await?;
        let registry = Self::new(Arc::new(store), resolver);
        registry.serve_kinds(&[&crate::kinds::Core, &crate::kinds::ModuleKinds]);
        Ok(registry)
    }

    /// A registry over `base` serving nothing yet: serve the built-in kinds' providers with
    /// [`Registry::serve_kinds`] (the [`Core`](crate::kinds::Core) ones at least), then call
    /// [`Registry::start`] to follow CustomResourceDefinitions. Must run inside a tokio runtime (caches start tasks).
    pub fn new(base: Arc<dyn Storage>, resolver: Arc<dyn StrategyResolver>) -> Arc<Self> {
        Arc::new(Self {
            base: base.clone(),
            resolver,
            table: RwLock::default(),
            observed: watch::Sender::new(0),
            synced: watch::Sender::new(false),
            generation: watch::Sender::new(0),
            admission: Arc::default(),
        })
    }

    /// The resolver of the kinds whose strategy is a module's.
    pub(crate) fn resolver(&self) -> &Arc<dyn StrategyResolver> {
        &self.resolver
    }

    fn storage_for(&self, table: &mut Table, prefix: &str) -> Arc<dyn Storage> {
        if let Some(storage) = table.storages.get(prefix) {
            return storage.clone();
        }
        let (storage, cache) = resource_storage(&self.base, prefix);
        table.storages.insert(prefix.to_string(), storage.clone());
        if let Some(cache) = cache {
            table.caches.insert(prefix.to_string(), cache);
        }
        storage
    }

    /// Every watch cache's statistics, by key prefix (for metrics).
    pub fn cache_stats(&self) -> Vec<(String, CacherStats)> {
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        table
            .caches
            .iter()
            .map(|(prefix, c)| (prefix.clone(), c.stats()))
            .collect()
    }

    /// Objects of `group`/`plural` in its watch cache (all namespaces), `None` for a resource
    /// not served or not cached. What a list's cost is estimated from.
    pub fn stored_objects(&self, group: &str, plural: &str) -> Option<usize> {
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        let served = table
            .resources
            .get(&(group.to_string(), plural.to_string()))?;
        table
            .caches
            .get(&served.def.key_prefix())
            .map(|c| c.object_count())
    }

    fn install(&self, def: Arc<ResourceDefinition>, strategy: Arc<dyn Strategy>) {
        let mut table = self.table.write().unwrap_or_else(|p| p.into_inner());
        let storage = self.storage_for(&mut table, &def.key_prefix());
        let namespaces = def
            .namespaced
            .then(|| self.storage_for(&mut table, "/namespaces"));
        let store = RegistryStore::new(def.clone(), storage, strategy, namespaces)
            .with_admission(self.admission.clone());
        table.resources.insert(
            (def.group.clone(), def.plural.clone()),
            ServedResource { def, store },
        );
        drop(table);
        self.generation.send_modify(|g| *g += 1);
    }

    /// The validating admission chain every store's writes pass (the server adds plugins).
    pub fn admission(&self) -> &Arc<AdmissionChain> {
        &self.admission
    }

    /// A receiver that sees a change whenever a resource starts or stops being served.
    pub fn subscribe_changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// The resource served at `group`/`version` with `kind`, if any (what an owner reference
    /// or an Event's involved object names).
    pub fn resolve_kind(&self, group: &str, version: &str, kind: &str) -> Option<ServedResource> {
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        table
            .resources
            .values()
            .find(|r| {
                r.def.group == group
                    && r.def.kind == kind
                    && r.def.stored_as.is_none()
                    && r.def.version(version).is_some()
            })
            .cloned()
    }

    /// Serves a built-in kind (not from a CustomResourceDefinition) with `strategy`: what a
    /// [`KindProvider`](crate::kinds::KindProvider) calls.
    pub fn serve_builtin(&self, def: ResourceDefinition, strategy: Arc<dyn Strategy>) {
        self.install(Arc::new(def), strategy);
    }

    /// Waits (up to `timeout`) for the first list of definitions; returns whether it came.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let mut rx = self.synced.subscribe();
        let synced = tokio::time::timeout(timeout, rx.wait_for(|s| *s)).await;
        synced.is_ok()
    }

    /// The resource served at `group`/`version`/`plural`, if any.
    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<ServedResource> {
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        table
            .resources
            .get(&(group.to_string(), plural.to_string()))
            .filter(|r| r.def.version(version).is_some())
            .cloned()
    }

    /// Every served resource, ordered by group and plural.
    pub fn resources(&self) -> Vec<ServedResource> {
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        table.resources.values().cloned().collect()
    }

    /// The built-in CustomResourceDefinition resource.
    pub fn crds(&self) -> ServedResource {
        self.resolve(
            super::definition::CRD_GROUP,
            "v1",
            "customresourcedefinitions",
        )
        .expect("CRDs are built in")
    }

    /// True once the first list of definitions is in.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits (up to `timeout`) until the served table reflects every definition change up to
    /// `revision`; a CRD write waits for it so the next request sees the new resource.
    pub async fn wait_observed(&self, revision: u64, timeout: Duration) {
        let mut rx = self.observed.subscribe();
        let _ = tokio::time::timeout(timeout, rx.wait_for(|r| *r >= revision)).await;
    }

    fn apply_crd(&self, crd: &Value) {
        self.serve_definition(crd, ResourceDefinition::from_crd(crd));
    }

    /// Serves a definition read from `crd` (read once by the caller: reading compiles its CEL
    /// rules).
    fn serve_definition(
        &self,
        crd: &Value,
        parsed: Result<ResourceDefinition, Vec<crate::strategy::FieldError>>,
    ) {
        let name = meta_str(crd, "name").unwrap_or("");
        match parsed {
            Ok(mut def) => {
                let existing = self.resolve_any(&def.group, &def.plural);
                // Objects stored before the defaults changed are defaulted as they are read; a
                // definition first seen (at start) may have changed them before any object.
                let defaults = def.defaults_fingerprint();
                def.defaults_revision = match &existing {
                    _ if defaults.is_empty() => 0,
                    Some(r) if r.def.defaults_fingerprint() == defaults => r.def.defaults_revision,
                    _ => meta_str(crd, "resourceVersion")
                        .and_then(|rv| rv.parse().ok())
                        .unwrap_or(0),
                };
                if existing.as_ref().is_some_and(|r| *r.def == def) {
                    return;
                }
                if existing.as_ref().is_some_and(|r| r.def.builtin) {
                    tracing::warn!(crd = %name, "a definition may not replace a built-in resource");
                    return;
                }
                tracing::info!(crd = %name, versions = def.versions.len(), "serving custom resource");
                let strategy = self.resolver.strategy(&def.group, &def.kind);
                self.install(Arc::new(def), strategy);
            }
            Err(errors) => tracing::warn!(crd = %name, ?errors, "ignoring an invalid definition"),
        }
    }

    /// The resource served as `group`/`plural`, at whichever versions it has.
    pub fn resolve_any(&self, group: &str, plural: &str) -> Option<ServedResource> {
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        table
            .resources
            .get(&(group.to_string(), plural.to_string()))
            .cloned()
    }

    fn remove_crd(&self, crd: &Value) {
        let group = crd
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("");
        let plural = crd
            .pointer("/spec/names/plural")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut table = self.table.write().unwrap_or_else(|p| p.into_inner());
        let key = (group.to_string(), plural.to_string());
        if table.resources.get(&key).is_some_and(|r| !r.def.builtin) {
            if let Some(r) = table.resources.remove(&key) {
                table.storages.remove(&r.def.key_prefix());
                table.caches.remove(&r.def.key_prefix());
                tracing::info!(%group, %plural, "stopped serving custom resource");
                drop(table);
                self.generation.send_modify(|g| *g += 1);
            }
        }
    }

    fn replace_all(&self, crds: &[Value]) {
        let parsed: Vec<_> = crds.iter().map(ResourceDefinition::from_crd).collect();
        let wanted: Vec<(String, String)> = parsed
            .iter()
            .filter_map(|d| d.as_ref().ok())
            .map(|d| (d.group.clone(), d.plural.clone()))
            .collect();
        let stale: Vec<ServedResource> = self
            .resources()
            .into_iter()
            .filter(|r| {
                !r.def.builtin && !wanted.contains(&(r.def.group.clone(), r.def.plural.clone()))
            })
            .collect();
        for r in stale {
            let mut table = self.table.write().unwrap_or_else(|p| p.into_inner());
            table
                .resources
                .remove(&(r.def.group.clone(), r.def.plural.clone()));
            table.storages.remove(&r.def.key_prefix());
            table.caches.remove(&r.def.key_prefix());
            drop(table);
            self.generation.send_modify(|g| *g += 1);
        }
        for (crd, def) in crds.iter().zip(parsed) {
            self.serve_definition(crd, def);
        }
    }

    /// Follows CustomResourceDefinitions through the registry-level watch until the registry is
    /// dropped.
    pub fn start(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let crds = self.crds();
        let mut events = Box::pin(crds.follow_revisions("v1"));
        tokio::spawn(async move {
            let mut listing = Vec::new();
            while let Some(event) = events.next().await {
                let Some(this) = weak.upgrade() else { return };
                let revision = event.revision();
                match event {
                    InformerEvent::Init => listing.clear(),
                    InformerEvent::InitApply(crd) => listing.push(crd.to_value()),
                    InformerEvent::InitDone { .. } => {
                        this.replace_all(&std::mem::take(&mut listing));
                        this.synced.send_replace(true);
                    }
                    InformerEvent::Apply(crd) => this.apply_crd(&crd.to_value()),
                    InformerEvent::Delete(crd) => this.remove_crd(&crd.to_value()),
                    InformerEvent::Progress(_) => {}
                }
                if let Some(r) = revision {
                    this.observed.send_if_modified(|cur| {
                        let newer = r > *cur;
                        if newer {
                            *cur = r;
                        }
                        newer
                    });
                }
            }
        });
    }
}
