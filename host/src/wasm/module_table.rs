//! The table of active modules per resource: one slot per (group, kind) swapped atomically, the
//! `Arc<dyn Strategy>` handles the registry holds (which follow the slot), and each source's status.
//!
//! A source is anything that feeds modules in (`dir:<file>` from the watched directory; an API
//! object later): every source goes through [`ModuleTable::load`] and [`ModuleTable::unload`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use arc_swap::ArcSwapOption;
use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::broadcast;

use super::runtime::{digest, Error, Result, Runtime, StrategyModule};
use super::wasm_strategy::WasmStrategy;
use crate::strategy::{
    Admission, DefaultStrategy, ResourceInfo, Strategy, StrategyContext, StrategyError,
    StrategyResolver,
};

/// Whether a source's latest version serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleState {
    /// The version in `digest` serves its resources.
    Active,
    /// The version in `digest` failed a check; `digest_in_force` (if any) keeps serving.
    Rejected,
    /// The source was removed; its resources fell back to the default strategy.
    Unloaded,
}

/// What happened to a source's latest version (shown over the API and in logs).
#[derive(Debug, Clone)]
pub struct ModuleStatus {
    /// The source, e.g. `dir:deployments.wasm`.
    pub source: String,
    /// The module's name, once a version of it loaded.
    pub module: Option<String>,
    /// SHA-256 of the latest version offered.
    pub digest: String,
    /// SHA-256 of the version serving now, if any.
    pub digest_in_force: Option<String>,
    /// Active, Rejected or Unloaded.
    pub state: ModuleState,
    /// Why the latest version was rejected.
    pub reason: Option<String>,
    /// The resources the version in force serves.
    pub resources: Vec<ResourceInfo>,
    /// When this status was recorded.
    pub updated: SystemTime,
}

/// A check the registry can install: may this module serve this resource?
pub type ResourceCheck = Arc<dyn Fn(&ResourceInfo) -> Result<(), String> + Send + Sync>;

type Key = (String, String);

struct Binding {
    source: String,
    strategy: WasmStrategy,
}

struct Slot {
    name: String,
    current: ArcSwapOption<Binding>,
}

struct Source {
    module: Arc<StrategyModule>,
    keys: Vec<Key>,
}

/// The active module of every resource, and the status of every source.
pub struct ModuleTable {
    runtime: Runtime,
    slots: RwLock<HashMap<Key, Arc<Slot>>>,
    /// Sources and statuses; holding it serialises swaps.
    sources: Mutex<(BTreeMap<String, Source>, BTreeMap<String, ModuleStatus>)>,
    resource_check: RwLock<Option<ResourceCheck>>,
    events: broadcast::Sender<ModuleStatus>,
}

impl std::fmt::Debug for ModuleTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleTable").finish_non_exhaustive()
    }
}

/// The prefix of the sources of modules built into the binary, which yield to any other source.
pub(crate) const BUILTIN_SOURCE_PREFIX: &str = "builtin:";

fn is_builtin_source(source: &str) -> bool {
    source.starts_with(BUILTIN_SOURCE_PREFIX)
}

fn key(group: &str, kind: &str) -> Key {
    (group.to_owned(), kind.to_owned())
}

impl ModuleTable {
    /// An empty table: every resource has the default strategy.
    pub fn new(runtime: Runtime) -> Self {
        Self {
            runtime,
            slots: RwLock::default(),
            sources: Mutex::default(),
            resource_check: RwLock::default(),
            events: broadcast::channel(64).0,
        }
    }

    /// The runtime modules are loaded into.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The strategy of a resource, for the registry to hold: it calls whichever module is active
    /// for (group, kind) at the time of each call, or the default strategy when none is.
    pub fn strategy(&self, group: &str, kind: &str) -> Arc<dyn Strategy> {
        Arc::new(SlotStrategy {
            slot: self.slot(&key(group, kind)),
            fallback: DefaultStrategy,
        })
    }

    /// The module active for a resource, if any.
    pub fn active(&self, group: &str, kind: &str) -> Option<Arc<StrategyModule>> {
        let slot = self
            .slots
            .read()
            .expect("slots")
            .get(&key(group, kind))
            .cloned()?;
        let binding = slot.current.load_full()?;
        Some(binding.strategy.module().clone())
    }

    /// Installs a check every module's resources must pass before it is swapped in (e.g. against
    /// the served CustomResourceDefinitions).
    pub fn set_resource_check(&self, check: ResourceCheck) {
        *self.resource_check.write().expect("check") = Some(check);
    }

    /// Every status change, as it happens (e.g. to create the CRD of a newly declared resource).
    pub fn subscribe(&self) -> broadcast::Receiver<ModuleStatus> {
        self.events.subscribe()
    }

    /// The status of every source.
    pub fn statuses(&self) -> Vec<ModuleStatus> {
        self.sources
            .lock()
            .expect("sources")
            .1
            .values()
            .cloned()
            .collect()
    }

    /// The status of one source.
    pub fn status(&self, source: &str) -> Option<ModuleStatus> {
        self.sources.lock().expect("sources").1.get(source).cloned()
    }

    fn slot(&self, k: &Key) -> Arc<Slot> {
        if let Some(s) = self.slots.read().expect("slots").get(k) {
            return s.clone();
        }
        let mut slots = self.slots.write().expect("slots");
        slots
            .entry(k.clone())
            .or_insert_with(|| {
                Arc::new(Slot {
                    name: format!("wasm:{}/{}", k.0, k.1),
                    current: ArcSwapOption::empty(),
                })
            })
            .clone()
    }

    /// Offers a new version from `source`: compiled, checked and instantiated once, then swapped
    /// in atomically for every resource its manifest names (calls already running finish on the
    /// version they started with). A version failing any check is refused and the previous one
    /// keeps serving. Blocking (compiles): call it off the async workers.
    ///
    /// # Errors
    ///
    /// Why the version was refused (also recorded in the source's status and logged).
    pub fn load(&self, source: &str, bytes: &[u8]) -> Result<Arc<StrategyModule>> {
        self.load_checked(source, bytes, &|_| Ok(()))
    }

    /// [`ModuleTable::load`] with one more check the version must pass before the swap (e.g. that
    /// its manifest declares the resource an API object binds it to).
    ///
    /// # Errors
    ///
    /// Why the version was refused (also recorded in the source's status and logged).
    pub fn load_checked(
        &self,
        source: &str,
        bytes: &[u8],
        check: &dyn Fn(&StrategyModule) -> std::result::Result<(), String>,
    ) -> Result<Arc<StrategyModule>> {
        let offered = digest(bytes);
        if let Some(current) = self.current_of(source) {
            if current.digest() == offered {
                return Ok(current);
            }
        }
        let loaded = StrategyModule::load(&self.runtime, bytes)
            .and_then(|m| check(&m).map(|()| m).map_err(Error::Resource))
            .map(Arc::new);
        let mut guard = self.sources.lock().expect("sources");
        let (sources, statuses) = &mut *guard;
        let module = match loaded.and_then(|m| self.check_resources(sources, source, m)) {
            Ok(m) => m,
            Err(e) => {
                let previous = sources.get(source).map(|s| s.module.clone());
                tracing::warn!(source, digest = %offered, in_force = ?previous.as_ref().map(|m| m.digest()), "strategy module refused: {e}");
                let status = ModuleStatus {
                    source: source.to_owned(),
                    module: previous.as_ref().map(|m| m.name().to_owned()),
                    digest: offered,
                    digest_in_force: previous.as_ref().map(|m| m.digest().to_owned()),
                    state: ModuleState::Rejected,
                    reason: Some(e.to_string()),
                    resources: previous
                        .map(|m| m.manifest().resources.clone())
                        .unwrap_or_default(),
                    updated: SystemTime::now(),
                };
                statuses.insert(source.to_owned(), status.clone());
                let _ = self.events.send(status);
                return Err(e);
            }
        };
        let keys: Vec<Key> = module
            .manifest()
            .resources
            .iter()
            .map(|r| key(&r.group, &r.kind))
            .collect();
        let binding = Arc::new(Binding {
            source: source.to_owned(),
            strategy: WasmStrategy::new(self.runtime.clone(), module.clone()),
        });
        for k in &keys {
            let slot = self.slot(k);
            let taken_over = slot
                .current
                .load()
                .as_ref()
                .is_some_and(|b| b.source != source && !is_builtin_source(&b.source));
            if !(is_builtin_source(source) && taken_over) {
                slot.current.store(Some(binding.clone()));
            }
        }
        let previous = sources.insert(
            source.to_owned(),
            Source {
                module: module.clone(),
                keys: keys.clone(),
            },
        );
        if let Some(prev) = &previous {
            for k in prev.keys.iter().filter(|k| !keys.contains(k)) {
                self.release(sources, k, source);
            }
        }
        tracing::info!(
            source,
            module = module.name(),
            digest = module.digest(),
            previous = ?previous.as_ref().map(|p| p.module.digest()),
            resources = ?keys,
            "strategy module swapped in"
        );
        let status = ModuleStatus {
            source: source.to_owned(),
            module: Some(module.name().to_owned()),
            digest: module.digest().to_owned(),
            digest_in_force: Some(module.digest().to_owned()),
            state: ModuleState::Active,
            reason: None,
            resources: module.manifest().resources.clone(),
            updated: SystemTime::now(),
        };
        statuses.insert(source.to_owned(), status.clone());
        let _ = self.events.send(status);
        Ok(module)
    }

    /// Removes `source`'s module: its resources fall back to the default strategy. Returns
    /// whether the source had a module.
    pub fn unload(&self, source: &str) -> bool {
        let mut guard = self.sources.lock().expect("sources");
        let (sources, statuses) = &mut *guard;
        let Some(removed) = sources.remove(source) else {
            statuses.remove(source);
            return false;
        };
        for k in &removed.keys {
            self.release(sources, k, source);
        }
        tracing::info!(
            source,
            module = removed.module.name(),
            resources = ?removed.keys,
            "strategy module unloaded; its resources fall back to the default strategy"
        );
        let status = ModuleStatus {
            source: source.to_owned(),
            module: Some(removed.module.name().to_owned()),
            digest: removed.module.digest().to_owned(),
            digest_in_force: None,
            state: ModuleState::Unloaded,
            reason: None,
            resources: Vec::new(),
            updated: SystemTime::now(),
        };
        statuses.insert(source.to_owned(), status.clone());
        let _ = self.events.send(status);
        true
    }

    fn current_of(&self, source: &str) -> Option<Arc<StrategyModule>> {
        self.sources
            .lock()
            .expect("sources")
            .0
            .get(source)
            .map(|s| s.module.clone())
    }

    /// Empties a slot if `source` holds it, or hands it back to the built-in module serving
    /// the same resource, if there is one.
    fn release(&self, sources: &BTreeMap<String, Source>, k: &Key, source: &str) {
        let slot = self.slot(k);
        let held = slot
            .current
            .load()
            .as_ref()
            .is_some_and(|b| b.source == source);
        if !held {
            return;
        }
        let builtin = sources
            .iter()
            .find(|(s, e)| is_builtin_source(s) && s.as_str() != source && e.keys.contains(k));
        match builtin {
            Some((name, e)) => {
                tracing::info!(source = %name, resource = ?k, "the built-in module serves the resource again");
                slot.current.store(Some(Arc::new(Binding {
                    source: name.clone(),
                    strategy: WasmStrategy::new(self.runtime.clone(), e.module.clone()),
                })));
            }
            None => slot.current.store(None),
        }
    }

    fn check_resources(
        &self,
        sources: &BTreeMap<String, Source>,
        source: &str,
        module: Arc<StrategyModule>,
    ) -> Result<Arc<StrategyModule>> {
        let check = self.resource_check.read().expect("check").clone();
        for r in &module.manifest().resources {
            let k = key(&r.group, &r.kind);
            // A module built into the binary yields its resources to any other source.
            if let Some((other, _)) = sources
                .iter()
                .find(|(s, e)| s.as_str() != source && !is_builtin_source(s) && e.keys.contains(&k))
            {
                return Err(Error::Resource(format!(
                    "resource {}/{} is already served by the module from {other}",
                    r.group, r.kind
                )));
            }
            if let Some(check) = &check {
                check(r).map_err(|e| {
                    Error::Resource(format!("resource {}/{}: {e}", r.group, r.kind))
                })?;
            }
        }
        Ok(module)
    }
}

/// The registry's handle on a slot: each call goes to the module active at that moment.
struct SlotStrategy {
    slot: Arc<Slot>,
    fallback: DefaultStrategy,
}

macro_rules! delegate {
    ($self:ident, $method:ident($($arg:expr),*)) => {{
        match $self.slot.current.load_full() {
            Some(b) => b.strategy.$method($($arg),*).await,
            None => $self.fallback.$method($($arg),*).await,
        }
    }};
}

#[async_trait]
impl Strategy for SlotStrategy {
    fn name(&self) -> &str {
        &self.slot.name
    }

    async fn before_create(
        &self,
        ctx: &StrategyContext,
        obj: &mut Value,
    ) -> Result<Admission, StrategyError> {
        delegate!(self, before_create(ctx, obj))
    }

    async fn before_update(
        &self,
        ctx: &StrategyContext,
        new: &mut Value,
        old: &Value,
    ) -> Result<Admission, StrategyError> {
        delegate!(self, before_update(ctx, new, old))
    }

    async fn before_delete(
        &self,
        ctx: &StrategyContext,
        obj: &Value,
    ) -> Result<Admission, StrategyError> {
        delegate!(self, before_delete(ctx, obj))
    }

    fn allow_create_on_update(&self) -> bool {
        match self.slot.current.load().as_ref() {
            Some(b) => b.strategy.allow_create_on_update(),
            None => self.fallback.allow_create_on_update(),
        }
    }

    fn allow_unconditional_update(&self) -> bool {
        match self.slot.current.load().as_ref() {
            Some(b) => b.strategy.allow_unconditional_update(),
            None => self.fallback.allow_unconditional_update(),
        }
    }

    async fn after_create(&self, ctx: &StrategyContext, obj: &Value) -> Result<(), StrategyError> {
        delegate!(self, after_create(ctx, obj))
    }

    async fn after_update(
        &self,
        ctx: &StrategyContext,
        new: &Value,
        old: &Value,
    ) -> Result<(), StrategyError> {
        delegate!(self, after_update(ctx, new, old))
    }

    async fn after_delete(&self, ctx: &StrategyContext, obj: &Value) -> Result<(), StrategyError> {
        delegate!(self, after_delete(ctx, obj))
    }
}

impl StrategyResolver for ModuleTable {
    fn strategy(&self, group: &str, kind: &str) -> Arc<dyn Strategy> {
        ModuleTable::strategy(self, group, kind)
    }
}
