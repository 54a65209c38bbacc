//! The table of active modules per resource: one slot per (group, kind) swapped atomically, the
//! `Arc<dyn Strategy>` handles the registry holds (which follow the slot), and each source's status.
//!
//! A source is anything that feeds modules in (`dir:<file>` from the watched directory, `api:`
//! StrategyModule objects, `builtin:`): every source goes through [`ModuleTable::load`] and
//! [`ModuleTable::unload`]; `staging.rs` holds versions staged beside the one in force.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use tokio::sync::broadcast;

mod authorizers;
mod conversion_check;
mod loading;
mod policies;
mod refusal;
mod staging;
mod status;

use authorizers::{authorizer_key, AUTHORIZER_KEY_PREFIX};
pub use conversion_check::{ConversionSample, ConversionSamples};
pub use loading::Compiling;
use policies::{policy_key, POLICY_KEY_PREFIX};
pub use policies::{PolicyInForce, PolicyReplay, ReplayError};
pub(crate) use refusal::KindRefusals;
pub use refusal::{ConversionFailure, Refusal};
pub use status::{ModuleState, ModuleStatus};

use super::rollout::{RolloutMetrics, StagedVersion};
use super::slot::{Binding, Slot, SlotStrategy};
use super::wasm_strategy::WasmStrategy;
use crate::strategy::{ResourceInfo, Strategy, StrategyResolver};
use strategy_host_wasm_runtime::{digest, Error, Result, Runtime, StrategyModule};

/// A check the registry can install: may this module serve this resource?
pub type ResourceCheck = Arc<dyn Fn(&ResourceInfo) -> Result<(), Refusal> + Send + Sync>;

type Key = (String, String);

struct Source {
    module: Arc<StrategyModule>,
    keys: Vec<Key>,
}

/// Every source's version in force, staged version and status; one lock, which serialises
/// swaps.
#[derive(Default)]
struct Sources {
    in_force: BTreeMap<String, Source>,
    statuses: BTreeMap<String, ModuleStatus>,
    staged: BTreeMap<String, (Arc<StagedVersion>, Vec<Key>)>,
}

/// The slots a module serves: its resources', or an admission policy's or authorizer's own.
fn keys_of(module: &StrategyModule) -> Vec<Key> {
    let manifest = module.manifest();
    if manifest.admission_policy.is_some() {
        return vec![policy_key(&manifest.name)];
    }
    if manifest.authorizer.is_some() {
        return vec![authorizer_key(&manifest.name)];
    }
    manifest
        .resources
        .iter()
        .map(|r| key(&r.group, &r.kind))
        .collect()
}

/// The active module of every resource, and the status of every source.
pub struct ModuleTable {
    runtime: Runtime,
    slots: RwLock<HashMap<Key, Arc<Slot>>>,
    sources: Mutex<Sources>,
    rollout_metrics: Arc<RolloutMetrics>,
    resource_check: RwLock<Option<ResourceCheck>>,
    conversion_samples: RwLock<Option<ConversionSamples>>,
    policy_replay: Arc<RwLock<Option<std::sync::Weak<dyn PolicyReplay>>>>,
    events: broadcast::Sender<ModuleStatus>,
    loading: loading::Loading,
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
            rollout_metrics: Arc::default(),
            resource_check: RwLock::default(),
            conversion_samples: RwLock::default(),
            policy_replay: Arc::default(),
            events: broadcast::channel(64).0,
            loading: loading::Loading::default(),
        }
    }

    /// The versions being compiled now (for `/readyz` and `/debug/strategies`).
    pub fn compiling(&self) -> Vec<Compiling> {
        self.loading.compiling()
    }

    /// Marks the server's first load of modules (its strategy directory) as running or done;
    /// while it runs, the server is not ready and resource requests wait for it.
    pub fn set_starting(&self, starting: bool) {
        self.loading.set_starting(starting);
    }

    /// Whether the server's first load of modules is still running.
    pub fn starting(&self) -> bool {
        self.loading.starting()
    }

    /// The Prometheus series of staged versions (registered beside the runtime's).
    pub fn rollout_metrics(&self) -> &RolloutMetrics {
        &self.rollout_metrics
    }

    /// The runtime modules are loaded into.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The strategy of a resource, for the registry to hold: it calls whichever module is active
    /// for (group, kind) at the time of each call, or the default strategy when none is.
    pub fn strategy(&self, group: &str, kind: &str) -> Arc<dyn Strategy> {
        Arc::new(SlotStrategy::new(self.slot(&key(group, kind))))
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
            .statuses
            .values()
            .cloned()
            .collect()
    }

    /// The status of one source.
    pub fn status(&self, source: &str) -> Option<ModuleStatus> {
        self.sources
            .lock()
            .expect("sources")
            .statuses
            .get(source)
            .cloned()
    }

    fn slot(&self, k: &Key) -> Arc<Slot> {
        if let Some(s) = self.slots.read().expect("slots").get(k) {
            return s.clone();
        }
        let mut slots = self.slots.write().expect("slots");
        slots
            .entry(k.clone())
            .or_insert_with(|| Arc::new(Slot::new(format!("wasm:{}/{}", k.0, k.1))))
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
        check: &dyn Fn(&StrategyModule) -> std::result::Result<(), Refusal>,
    ) -> Result<Arc<StrategyModule>> {
        let offered = digest(bytes);
        if let Some(current) = self.keep_in_force(source, &offered) {
            return Ok(current);
        }
        let loaded = self.compile(source, bytes, check);
        let mut guard = self.sources.lock().expect("sources");
        let module = self.admit(&mut guard, source, &offered, loaded)?;
        let Sources {
            in_force: sources,
            statuses,
            staged,
        } = &mut *guard;
        let keys = keys_of(&module);
        let binding = Arc::new(Binding {
            source: source.to_owned(),
            strategy: WasmStrategy::new(self.runtime.clone(), module.clone()),
        });
        for k in &keys {
            let slot = self.slot(k);
            let taken_over =
                slot.in_force_is(|b| b.source != source && !is_builtin_source(&b.source));
            if !(is_builtin_source(source) && taken_over) {
                slot.current.store(Some(binding.clone()));
            }
        }
        // The swap is the promotion: whatever was staged for this source is done.
        self.clear_staged(staged, source);
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
            staged: None,
        };
        statuses.insert(source.to_owned(), status.clone());
        let _ = self.events.send(status);
        Ok(module)
    }

    /// Compiles and checks a version (outside the table's lock: compiling takes a while).
    fn compile(
        &self,
        source: &str,
        bytes: &[u8],
        check: &dyn Fn(&StrategyModule) -> std::result::Result<(), Refusal>,
    ) -> Result<Arc<StrategyModule>> {
        let _compiling = self.loading.begin(source, bytes.len());
        StrategyModule::load(&self.runtime, bytes)
            .and_then(|m| check(&m).map(|()| m).map_err(refused))
            .and_then(|m| self.check_round_trips(&m).map(|()| m).map_err(refused))
            .map(Arc::new)
    }

    /// Checks a compiled version's resources against the other sources; a refusal is recorded
    /// in the source's status (the version in force, if any, keeps serving) and logged.
    fn admit(
        &self,
        guard: &mut Sources,
        source: &str,
        offered: &str,
        loaded: Result<Arc<StrategyModule>>,
    ) -> Result<Arc<StrategyModule>> {
        let e = match loaded.and_then(|m| self.check_resources(&guard.in_force, source, m)) {
            Ok(m) => return Ok(m),
            Err(e) => e,
        };
        let previous = guard.in_force.get(source).map(|s| s.module.clone());
        tracing::warn!(source, digest = %offered, in_force = ?previous.as_ref().map(|m| m.digest()), "strategy module refused: {e}");
        let status = ModuleStatus {
            source: source.to_owned(),
            module: previous.as_ref().map(|m| m.name().to_owned()),
            digest: offered.to_owned(),
            digest_in_force: previous.as_ref().map(|m| m.digest().to_owned()),
            state: ModuleState::Rejected,
            reason: Some(e.to_string()),
            resources: previous
                .map(|m| m.manifest().resources.clone())
                .unwrap_or_default(),
            updated: SystemTime::now(),
            staged: self.staged_in(guard, source),
        };
        guard.statuses.insert(source.to_owned(), status.clone());
        let _ = self.events.send(status);
        Err(e)
    }

    /// Records that the version `offered` (a digest) of `source` was refused before it could be
    /// compiled (e.g. a pulled artifact that is not a module, or not the pinned one); the version
    /// in force, if any, keeps serving.
    pub fn refuse(&self, source: &str, offered: &str, refusal: Refusal) {
        let mut guard = self.sources.lock().expect("sources");
        let _ = self.admit(&mut guard, source, offered, Err(refused(refusal)));
    }

    /// Removes `source`'s module: its resources fall back to the default strategy. Returns
    /// whether the source had a module.
    pub fn unload(&self, source: &str) -> bool {
        let mut guard = self.sources.lock().expect("sources");
        let Sources {
            in_force: sources,
            statuses,
            staged,
        } = &mut *guard;
        let had_staged = self.clear_staged(staged, source);
        let Some(removed) = sources.remove(source) else {
            statuses.remove(source);
            return had_staged;
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
            staged: None,
        };
        statuses.insert(source.to_owned(), status.clone());
        let _ = self.events.send(status);
        true
    }

    /// The version in force of `source` when it is the one `offered` (digest), after ending any
    /// staging beside it: offering (or promoting) the version in force changes nothing else.
    fn keep_in_force(&self, source: &str, offered: &str) -> Option<Arc<StrategyModule>> {
        let current = self.current_of(source).filter(|c| c.digest() == offered)?;
        self.unstage(source);
        Some(current)
    }

    fn current_of(&self, source: &str) -> Option<Arc<StrategyModule>> {
        self.sources
            .lock()
            .expect("sources")
            .in_force
            .get(source)
            .map(|s| s.module.clone())
    }

    /// Empties a slot if `source` holds it, or hands it back to the built-in module serving
    /// the same resource, if there is one.
    fn release(&self, sources: &BTreeMap<String, Source>, k: &Key, source: &str) {
        let slot = self.slot(k);
        if !slot.in_force_is(|b| b.source == source) {
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
        for k in keys_of(&module) {
            // A module built into the binary yields its resources to any other source.
            if let Some((other, _)) = sources
                .iter()
                .find(|(s, e)| s.as_str() != source && !is_builtin_source(s) && e.keys.contains(&k))
            {
                let what = match (
                    k.1.strip_prefix(POLICY_KEY_PREFIX),
                    k.1.strip_prefix(AUTHORIZER_KEY_PREFIX),
                ) {
                    (Some(name), _) => format!("admission policy {name:?}"),
                    (_, Some(name)) => format!("authorizer {name:?}"),
                    _ => format!("resource {}/{}", k.0, k.1),
                };
                return Err(Error::Resource(format!(
                    "{what} is already served by the module from {other}"
                )));
            }
        }
        for r in &module.manifest().resources {
            if let Some(check) = &check {
                check(r).map_err(|e| {
                    Error::Resource(format!("resource {}/{}: {e}", r.group, r.kind))
                })?;
            }
        }
        Ok(module)
    }
}

impl StrategyResolver for ModuleTable {
    fn strategy(&self, group: &str, kind: &str) -> Arc<dyn Strategy> {
        ModuleTable::strategy(self, group, kind)
    }
}

/// A refusal as the runtime's load error, recorded in the source's status.
fn refused(refusal: Refusal) -> Error {
    Error::Resource(refusal.to_string())
}
