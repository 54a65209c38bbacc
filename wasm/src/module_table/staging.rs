//! Versions staged beside the one in force (shadow, canary): offering one, ending its
//! staging, and its replay over the stored objects of its resources.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use super::{
    key, keys_of, Key, ModuleState, ModuleStatus, ModuleTable, PolicyReplay, Refusal, Sources,
};
use crate::rollout::{Role, RolloutMode, RolloutSpec, StagedVersion};
use crate::slot::{Slot, SlotStrategy};
use crate::strategy::{ResourceInfo, StrategyContext};
use crate::user::UserInfo;
use crate::wasm_strategy::WasmStrategy;
use strategy_host_wasm_runtime::{
    digest, CallerInfo, Collection, HostCallError, Result, StrategyModule,
};

/// How often a replay asks for what it needs (a resource that is not served yet, the admission
/// plugin), and how far apart.
const LIST_ATTEMPTS: usize = 40;
const LIST_RETRY: std::time::Duration = std::time::Duration::from_millis(250);

impl ModuleTable {
    /// Offers a new version from `source` under `rollout`: `Active` is [`ModuleTable::load_checked`]
    /// (the atomic swap); `Shadow` and `Canary` stage it beside the version in force (which keeps
    /// serving) after the same checks, replay it over the stored objects of its resources, and
    /// report in the source's status. Offering the staged version again with the same rollout
    /// keeps it (and its counts); `rolled_back` stages a version that was already rolled back
    /// (the reason recorded elsewhere), so it never serves again. Blocking (compiles).
    ///
    /// # Errors
    ///
    /// Why the version was refused (also recorded in the source's status and logged).
    pub fn stage(
        &self,
        source: &str,
        bytes: &[u8],
        rollout: &RolloutSpec,
        rolled_back: Option<String>,
        check: &dyn Fn(&StrategyModule) -> std::result::Result<(), Refusal>,
    ) -> Result<Arc<StrategyModule>> {
        if rollout.mode == RolloutMode::Active {
            return self.load_checked(source, bytes, check);
        }
        let offered = digest(bytes);
        if let Some(current) = self.keep_in_force(source, &offered) {
            return Ok(current);
        }
        if let Some(s) = self.staged(source) {
            if s.digest() == offered && s.spec() == rollout {
                return Ok(s.module().clone());
            }
        }
        let loaded = self.compile(source, bytes, check);
        let mut guard = self.sources.lock().expect("sources");
        let module = self.admit(&mut guard, source, &offered, loaded)?;
        let Sources {
            in_force,
            statuses,
            staged,
        } = &mut *guard;
        let version = Arc::new(StagedVersion::new(
            source,
            *rollout,
            WasmStrategy::new(self.runtime.clone(), module.clone()),
            self.rollout_metrics.clone(),
            rolled_back,
        ));
        let mut status = match (statuses.get(source), in_force.get(source)) {
            (Some(s), Some(_)) => s.clone(),
            _ => ModuleStatus {
                source: source.to_owned(),
                module: Some(module.name().to_owned()),
                digest: offered.clone(),
                digest_in_force: None,
                state: ModuleState::Staged,
                reason: None,
                resources: Vec::new(),
                updated: SystemTime::now(),
                staged: None,
            },
        };
        let events = self.events.clone();
        let template = status.clone();
        version.on_rollback(Box::new(move |v| {
            let mut status = template.clone();
            status.staged = Some(v);
            status.updated = SystemTime::now();
            let _ = events.send(status);
        }));
        self.clear_staged(staged, source);
        let keys = keys_of(&module);
        for k in &keys {
            self.slot(k).staged.store(Some(version.clone()));
        }
        staged.insert(source.to_owned(), (version.clone(), keys.clone()));
        tracing::info!(
            source,
            module = module.name(),
            digest = module.digest(),
            mode = rollout.mode.as_str(),
            in_force = ?in_force.get(source).map(|s| s.module.digest()),
            resources = ?keys,
            "strategy module staged beside the version in force"
        );
        status.staged = Some(version.clone());
        status.updated = SystemTime::now();
        statuses.insert(source.to_owned(), status.clone());
        let _ = self.events.send(status);
        drop(guard);
        if version.is_live() {
            self.start_replay(&version, &keys);
        }
        Ok(module)
    }

    pub(super) fn staged_in(&self, guard: &Sources, source: &str) -> Option<Arc<StagedVersion>> {
        guard.staged.get(source).map(|(v, _)| v.clone())
    }

    /// The version staged for `source`, if any.
    pub fn staged(&self, source: &str) -> Option<Arc<StagedVersion>> {
        let guard = self.sources.lock().expect("sources");
        self.staged_in(&guard, source)
    }

    /// Ends the staging of `source`'s candidate, if any (its slots stop calling it).
    pub(super) fn unstage(&self, source: &str) {
        let mut guard = self.sources.lock().expect("sources");
        let Sources {
            statuses, staged, ..
        } = &mut *guard;
        if self.clear_staged(staged, source) {
            if let Some(status) = statuses.get_mut(source) {
                status.staged = None;
                status.updated = SystemTime::now();
                let _ = self.events.send(status.clone());
            }
        }
    }

    pub(super) fn clear_staged(
        &self,
        staged: &mut BTreeMap<String, (Arc<StagedVersion>, Vec<Key>)>,
        source: &str,
    ) -> bool {
        let Some((version, keys)) = staged.remove(source) else {
            return false;
        };
        for k in &keys {
            let slot = self.slot(k);
            if slot.stages(&version) {
                slot.staged.store(None);
            }
        }
        true
    }

    /// Replays a staged version over the stored objects of its resources, on a task of its own
    /// (the objects are read through the host API, so through each resource's cache), once the
    /// registry installed the host API.
    fn start_replay(&self, version: &Arc<StagedVersion>, keys: &[Key]) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if version.module().manifest().admission_policy.is_some() {
            let Some(slot) = keys.first().map(|k| self.slot(k)) else {
                return;
            };
            handle.spawn(replay_policy(self.policy_replay(), version.clone(), slot));
            return;
        }
        let resources: Vec<(ResourceInfo, Arc<Slot>)> = version
            .module()
            .manifest()
            .resources
            .iter()
            .filter(|r| keys.contains(&key(&r.group, &r.kind)))
            .map(|r| (r.clone(), self.slot(&key(&r.group, &r.kind))))
            .collect();
        let (runtime, version) = (self.runtime.clone(), version.clone());
        handle.spawn(async move {
            let report = version.report().clone();
            report.set_replay("Running", 0);
            let mut replayed = 0;
            for (resource, slot) in resources {
                let caller = CallerInfo {
                    module: version.module().name().to_owned(),
                    request_id: "strategy-rollout-replay".into(),
                    resource: resource.clone(),
                    dry_run: true,
                };
                // A directory module staged at start waits for the registry's host API; the
                // registry then serves a resource once its definition synced, which a module
                // staged with its CRD may briefly precede.
                let api = runtime.installed_host_api().await;
                let listed = patiently(&version, || {
                    let (api, caller, r) = (api.clone(), caller.clone(), resource.clone());
                    async move {
                        tokio::task::spawn_blocking(move || {
                            api.list(&caller, Collection::new(&r.group, &r.plural, ""), "")
                        })
                        .await
                        .unwrap_or_else(|e| Err(HostCallError::failed(e)))
                    }
                })
                .await;
                let objects = match listed {
                    Ok(objects) => objects,
                    Err(e) => {
                        tracing::warn!(source = ?version, resource = %resource.plural, "replay could not list stored objects: {e}");
                        report.set_replay("Failed", replayed);
                        return;
                    }
                };
                let ctx = StrategyContext {
                    resource,
                    dry_run: true,
                    request_id: "strategy-rollout-replay".into(),
                    hook_depth: 0,
                    user: Arc::new(UserInfo {
                        username: "system:strategy-host:replay".into(),
                        groups: vec!["system:authenticated".into()],
                        ..UserInfo::default()
                    }),
                };
                let in_force = SlotStrategy::in_force(slot);
                version
                    .replay(&in_force, &Role::Strategy, &ctx, &objects)
                    .await;
                replayed += objects.len() as u64;
            }
            report.set_replay("Done", replayed);
            tracing::info!(source = ?version, objects = replayed, "staged strategy module replayed over the stored objects");
        });
    }
}

/// What `attempt` gives once it succeeds, `version` is no longer live, or it was made
/// `LIST_ATTEMPTS` times (`LIST_RETRY` apart): the last outcome. A module staged at start, or
/// with its CRD, may precede the registry's host API or the resource it replays over.
async fn patiently<T, E, Fut>(
    version: &StagedVersion,
    mut attempt: impl FnMut() -> Fut,
) -> std::result::Result<T, E>
where
    Fut: std::future::Future<Output = std::result::Result<T, E>>,
{
    let mut made = 1;
    loop {
        let outcome = attempt().await;
        if outcome.is_ok() || !version.is_live() || made == LIST_ATTEMPTS {
            return outcome;
        }
        made += 1;
        tokio::time::sleep(LIST_RETRY).await;
    }
}

/// Replays a staged policy module (in `slot`) over the stored objects its declaration matches,
/// through the admission layer's replay once it is installed.
async fn replay_policy(
    installed: impl Fn() -> Option<Arc<dyn PolicyReplay>> + Send,
    version: Arc<StagedVersion>,
    slot: Arc<Slot>,
) {
    let report = version.report().clone();
    report.set_replay("Running", 0);
    let replay = patiently(&version, || std::future::ready(installed().ok_or(()))).await;
    let Ok(replay) = replay else {
        tracing::warn!(source = ?version, "no admission plugin to replay the staged policy module");
        report.set_replay("Failed", 0);
        return;
    };
    let in_force = SlotStrategy::in_force(slot);
    match replay.replay(&in_force, &version).await {
        Ok(objects) => {
            report.set_replay("Done", objects);
            tracing::info!(source = ?version, objects, "staged admission policy module replayed over the stored objects it matches");
        }
        Err(e) => {
            tracing::warn!(source = ?version, "replay of the staged policy module failed: {e}");
            report.set_replay("Failed", 0);
        }
    }
}
