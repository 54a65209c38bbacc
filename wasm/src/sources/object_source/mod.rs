//! Hot reload from the API: follows `StrategyModule` objects (list, then watch from the list's
//! revision) and feeds each to the module table as the source `api:<name>`; a deleted object
//! unloads its module. What happened is written back into the object's status, so every replica
//! on the same store loads the same version and `kubectl get strategymodules` shows the outcome.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Weak};

use futures::StreamExt as _;
use serde_json::Value;

use super::module_object::{source_name, ModuleSource, ModuleSpec, GROUP, PLURAL, VERSION};
use super::pull::{PullError, PullRequest, Pulled, Puller, RegistryAuth};
use crate::{ModuleState, ModuleTable, Refusal};
use pulling::{agreed_resolution, digest_in_force, pending_status, PullState};
use status::{rejected_status, rolled_back_here, status_of, write_status};
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::{Event, EventStreamExt as _, Writer};
use strategy_host_registry::system_fields::meta_str;
use strategy_host_registry::{Registry, ServedResource};

mod pulling;
mod status;

/// Follows `StrategyModule` objects into `table` until the registry is dropped, pulling the
/// modules of those with `spec.url` through `puller`.
pub fn start(table: Arc<ModuleTable>, registry: &Arc<Registry>, puller: Arc<Puller>) {
    let Some(resource) = registry.resolve(GROUP, VERSION, PLURAL) else {
        tracing::error!("strategymodules are not served; StrategyModule objects are not followed");
        return;
    };
    let weak = Arc::downgrade(registry);
    tokio::spawn(async move {
        let (pulled, pulls_done) = tokio::sync::mpsc::unbounded_channel();
        let mut follower = Follower {
            table,
            registry: weak,
            seen: HashMap::new(),
            puller,
            objects: HashMap::new(),
            pulls: HashMap::new(),
            pulled,
        };
        follower.follow(resource, pulls_done).await;
    });
}

/// A pull's outcome, sent back to the follower's loop by the task that ran it.
struct PullDone {
    name: String,
    key: String,
    result: Result<Pulled, PullError>,
}

struct Follower {
    table: Arc<ModuleTable>,
    registry: Weak<Registry>,
    /// Object name → (digest, group, kind, rollout) last offered to the table, so the status
    /// writes this follower makes (which come back as MODIFIED events) do not reload anything.
    seen: HashMap<String, (String, String, String, String)>,
    /// Pulls the modules of objects with `spec.url`.
    puller: Arc<Puller>,
    /// Every object as last seen (a pull's outcome is applied to the object as it is now).
    objects: HashMap<String, Value>,
    /// The pull of each object with `spec.url`.
    pulls: HashMap<String, PullState>,
    /// Where pull tasks send their outcome.
    pulled: tokio::sync::mpsc::UnboundedSender<PullDone>,
}

/// How often the status of an object with a staged version is brought up to date with its
/// report (each replica writes its own counts; a write happens only when something changed).
const REPORT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// This replica's name in `status.rollout.replicas`: host name and process id, so replicas on one
/// machine are told apart.
fn replica_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let host = std::fs::read_to_string("/etc/hostname")
            .ok()
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        format!("{host}-{}", std::process::id())
    })
}

fn name_of(obj: &Value) -> String {
    meta_str(obj, "name").unwrap_or_default().to_owned()
}

impl Follower {
    /// Consumes the registry-level watch's events (and the table's, to retry refused versions) until the
    /// registry is dropped.
    async fn follow(
        &mut self,
        resource: ServedResource,
        mut pulls_done: tokio::sync::mpsc::UnboundedReceiver<PullDone>,
    ) {
        let writer = Writer::new();
        let copy = writer.reader();
        let mut events = Box::pin(resource.follow(VERSION).reflect(writer));
        let mut table_events = self.table.subscribe();
        let mut report_tick = tokio::time::interval(REPORT_INTERVAL);
        report_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if self.registry.strong_count() == 0 {
                return;
            }
            tokio::select! {
                event = events.next() => match event {
                    Some(Event::InitDone) => {
                        let listed = copy.values();
                        self.replace_all(&listed).await;
                    }
                    Some(Event::Apply(o)) => self.offer(&o.to_value()).await,
                    Some(Event::Delete(o)) => self.remove(&name_of(&o.to_value())),
                    Some(Event::Init | Event::InitApply(_)) => {}
                    None => return,
                },
                change = table_events.recv() => {
                    tracing::debug!(?change, "module table event");
                    let released = match change {
                        Ok(s) => s.state == ModuleState::Unloaded,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => true,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    };
                    if released {
                        self.retry_rejected().await;
                    }
                }
                Some(done) = pulls_done.recv() => self.pull_done(done).await,
                _ = report_tick.tick() => {
                    self.report_staged().await;
                    self.retry_pulls().await;
                }
            }
        }
    }

    /// A (re)list: unloads the modules of objects gone, offers every listed one.
    async fn replace_all(&mut self, listed: &[Value]) {
        let present: BTreeSet<String> = listed.iter().map(name_of).collect();
        let gone: Vec<String> = self
            .seen
            .keys()
            .filter(|n| !present.contains(*n))
            .cloned()
            .collect();
        for name in gone {
            self.remove(&name);
        }
        for obj in listed {
            self.offer(obj).await;
        }
    }

    /// Offers again every object whose version was refused: a module that unloaded may have
    /// released the resource it was refused for (e.g. its file left the strategy directory).
    async fn retry_rejected(&mut self) {
        let rejected: Vec<String> = self
            .seen
            .keys()
            .filter(|name| {
                self.table
                    .status(&source_name(name))
                    .is_some_and(|s| s.state == ModuleState::Rejected)
            })
            .cloned()
            .collect();
        for name in rejected {
            let Some(registry) = self.registry.upgrade() else {
                return;
            };
            let object = ObjectRef::new(GROUP, VERSION, PLURAL, None, &name);
            let reread = Client::new(&registry, "strategy-module-retry")
                .get_cached(&object)
                .await;
            match reread {
                Ok(None) => {}
                Ok(Some(obj)) => {
                    tracing::info!(object = %name, "offering a refused strategy module again");
                    self.seen.remove(&name);
                    self.offer(&obj).await;
                }
                Err(e) => {
                    tracing::warn!(object = %name, error = %e, "could not reread a strategy module")
                }
            }
        }
    }

    fn remove(&mut self, name: &str) {
        self.seen.remove(name);
        self.objects.remove(name);
        self.pulls.remove(name);
        self.table.unload(&source_name(name));
    }

    /// Loads the object's module unless this version was already offered (pulling it first when
    /// it is given by URL), then brings the object's status in line with the table's.
    async fn offer(&mut self, obj: &Value) {
        let name = name_of(obj);
        self.objects.insert(name.clone(), obj.clone());
        match ModuleSpec::from_object(obj) {
            Err(errors) => {
                // Admission refuses such specs; one stored before that rule is reported, not loaded.
                let reason = errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ");
                self.write(&name, |current| rejected_status(current, &reason))
                    .await;
            }
            Ok(spec) => match spec.source.clone() {
                ModuleSource::Inline { bytes, digest } => {
                    self.pulls.remove(&name);
                    self.stage(&name, obj, &spec, bytes.into(), &digest).await;
                }
                ModuleSource::Url { .. } => self.offer_url(&name, obj, &spec).await,
            },
        }
    }

    /// Offers the version `bytes` (whose SHA-256 is `digest`) of the object's module to the
    /// table unless it was already offered, and writes the table's status.
    async fn stage(
        &mut self,
        name: &str,
        obj: &Value,
        spec: &ModuleSpec,
        bytes: Arc<[u8]>,
        digest: &str,
    ) {
        let source = source_name(name);
        let rolled_back = rolled_back_here(obj, digest);
        if let (Some(reason), Some(staged)) = (&rolled_back, self.table.staged(&source)) {
            // Another replica (or this one before a restart) rolled this canary back.
            if staged.digest() == digest {
                staged.halt(reason);
            }
        }
        let offered = (
            digest.to_owned(),
            spec.group.clone(),
            spec.policy.clone().unwrap_or_else(|| spec.kind.clone()),
            format!("{:?}", spec.rollout),
        );
        if self.seen.get(name) != Some(&offered) {
            self.seen.insert(name.to_owned(), offered);
            let table = self.table.clone();
            let src = source.clone();
            let spec = spec.clone();
            let loaded = tokio::task::spawn_blocking(move || {
                table.stage(&src, &bytes, &spec.rollout, rolled_back, &|m| spec.binds(m))
            })
            .await;
            if let Err(e) = loaded {
                tracing::error!(source, "loading a strategy module panicked: {e}");
            }
        }
        self.write_table_status(name).await;
    }

    /// Writes the table's status of `name`'s source (with its pull's), or a pending one when no
    /// version of it was offered yet.
    async fn write_table_status(&self, name: &str) {
        match self.table.status(&source_name(name)) {
            Some(s) => self.write(name, |current| status_of(current, &s)).await,
            None => self.write(name, pending_status).await,
        }
    }

    /// An object with `spec.url`: serves the module from this host's copy when it holds the
    /// pinned or agreed version, else starts a pull (unless one runs or is backing off).
    async fn offer_url(&mut self, name: &str, obj: &Value, spec: &ModuleSpec) {
        let ModuleSource::Url {
            url,
            pinned,
            pull_secret,
        } = &spec.source
        else {
            return;
        };
        let generation = obj
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let url_text = url.to_string();
        let resolved = agreed_resolution(obj, &url_text, generation);
        let key = format!("{url_text} {pinned:?} {resolved:?} {generation}");
        let state = self
            .pulls
            .entry(name.to_owned())
            .or_insert_with(|| PullState::new(String::new(), url_text.clone(), generation));
        if state.key != key {
            // What this replica pulled still counts if it is what the replicas agreed on.
            let carried = state.pulled.take().filter(|p| {
                p.resolved == resolved && pinned.as_ref().is_none_or(|d| *d == p.digest)
            });
            *state = PullState::new(key.clone(), url_text, generation);
            state.resolved = resolved
                .clone()
                .or(carried.as_ref().and_then(|p| p.resolved.clone()));
            state.pulled = carried;
        }
        let mut request = PullRequest {
            url: url.clone(),
            pinned: pinned.clone(),
            resolved,
            auth: RegistryAuth::Anonymous,
        };
        let held = state.pulled.clone().or_else(|| self.puller.held(&request));
        if let Some(held) = held {
            let state = self.pulls.get_mut(name).expect("inserted above");
            state.failure = None;
            state.resolved = state.resolved.clone().or(held.resolved.clone());
            state.pulled = Some(held.clone());
            return self.stage(name, obj, spec, held.bytes, &held.digest).await;
        }
        if !state.may_pull() {
            return self.write_table_status(name).await;
        }
        state.in_flight = true;
        if let Some(secret) = pull_secret {
            let auth = match self.registry.upgrade() {
                Some(registry) => pulling::pull_secret_auth(&registry, secret, &url.host()).await,
                None => return,
            };
            match auth {
                Ok(auth) => request.auth = auth,
                Err(reason) => {
                    let result = Err(PullError::Unavailable {
                        url: url.to_string(),
                        detail: reason.to_string(),
                    });
                    let done = PullDone {
                        name: name.to_owned(),
                        key,
                        result,
                    };
                    return self.pull_done(done).await;
                }
            }
        }
        tracing::info!(object = %name, url = %request.url, "pulling a strategy module");
        let (puller, sender, name) = (self.puller.clone(), self.pulled.clone(), name.to_owned());
        tokio::spawn(async move {
            let result = puller.pull(&request).await;
            let _ = sender.send(PullDone { name, key, result });
        });
        self.write_table_status(&name_of(obj)).await;
    }

    /// A pull ended: its module is offered, or the failure recorded (the version in force keeps
    /// serving; one this host held before a restart is brought back), or the version refused.
    async fn pull_done(&mut self, done: PullDone) {
        let Some(state) = self.pulls.get_mut(&done.name) else {
            return;
        };
        if state.key != done.key {
            return; // The spec moved on while it was pulled.
        }
        state.in_flight = false;
        let Some(obj) = self.objects.get(&done.name).cloned() else {
            return;
        };
        let Ok(spec) = ModuleSpec::from_object(&obj) else {
            return;
        };
        let source = source_name(&done.name);
        match done.result {
            Ok(pulled) => {
                tracing::info!(object = %done.name, digest = %pulled.digest, resolved = ?pulled.resolved, "pulled a strategy module");
                state.failure = None;
                state.attempts = 0;
                state.retry_at = None;
                state.resolved = state.resolved.clone().or(pulled.resolved.clone());
                state.pulled = Some(pulled.clone());
                self.stage(&done.name, &obj, &spec, pulled.bytes, &pulled.digest)
                    .await;
            }
            Err(e) if e.is_permanent() => {
                tracing::warn!(object = %done.name, "refusing a pulled strategy module: {e}");
                state.refused = true;
                // The next version offered goes to the table, even the one in force.
                self.seen.remove(&done.name);
                let offered = match &e {
                    PullError::DigestMismatch { actual, .. } => actual.clone(),
                    _ => String::new(),
                };
                let offered = offered.trim_start_matches("sha256:").to_owned();
                self.table
                    .refuse(&source, &offered, Refusal::Pull(e.to_string()));
                self.write_table_status(&done.name).await;
            }
            Err(e) => {
                tracing::warn!(object = %done.name, "{e}; the version in force keeps serving");
                state.failed(e.to_string());
                let in_force = self
                    .table
                    .status(&source)
                    .is_some_and(|s| s.digest_in_force.is_some() || s.state == ModuleState::Active);
                let held =
                    digest_in_force(&obj).and_then(|d| Some((self.puller.held_digest(&d)?, d)));
                match held {
                    Some((bytes, digest)) if !in_force => {
                        tracing::info!(object = %done.name, %digest, "serving this host's copy of the version in force");
                        self.stage(&done.name, &obj, &spec, bytes.into(), &digest)
                            .await;
                    }
                    _ => self.write_table_status(&done.name).await,
                }
            }
        }
    }

    /// Starts again the pulls whose backoff is over.
    async fn retry_pulls(&mut self) {
        let due: Vec<String> = self
            .pulls
            .iter()
            .filter(|(_, p)| p.failure.is_some() && p.may_pull())
            .map(|(name, _)| name.clone())
            .collect();
        for name in due {
            if let Some(obj) = self.objects.get(&name).cloned() {
                self.offer(&obj).await;
            }
        }
    }

    /// Writes the status of every object whose version is staged (its report moves with traffic).
    async fn report_staged(&mut self) {
        let names: Vec<String> = self.seen.keys().cloned().collect();
        for name in names {
            let Some(status) = self.table.status(&source_name(&name)) else {
                continue;
            };
            if status.staged.is_some() {
                self.write(&name, |current| status_of(current, &status))
                    .await;
            }
        }
    }

    /// Writes the status `status_for` makes of the object as stored now (see [`write_status`]).
    async fn write(&self, name: &str, status_for: impl Fn(&Value) -> Value) {
        let source = source_name(name);
        let pull = self.pulls.get(name).map(PullState::view);
        let status_for = move |current: &Value| {
            let mut status = status_for(current);
            if let Some(pull) = &pull {
                pull.apply(current, &mut status);
            }
            status
        };
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        if let Err(e) = write_status(&registry, name, status_for).await {
            if !e.is_not_found() {
                tracing::warn!(source, error = %e, "could not write a strategy module's status");
            }
        }
    }
}

#[cfg(test)]
mod tests;
