//! Hot reload from the API: follows `StrategyModule` objects (list, then watch from the list's
//! revision) and feeds each to the module table as the source `api:<name>`; a deleted object
//! unloads its module. What happened is written back into the object's status, so every replica
//! on the same store loads the same version and `kubectl get strategymodules` shows the outcome.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Weak};

use futures::StreamExt as _;
use serde_json::{json, Value};

use super::module_object::{source_name, ModuleSpec, PLURAL, VERSION};
use crate::registry::system_fields::now_rfc3339;
use crate::registry::{Registry, RequestScope, ServedResource, UpdateFn};
use crate::storage::informer::{informer, InformerConfig, InformerEvent};
use crate::strategy::ResourceInfo;
use crate::wasm::runtime::StrategyModule;
use crate::wasm::{ModuleState, ModuleStatus, ModuleTable};

/// Follows `StrategyModule` objects into `table` until the registry is dropped.
pub fn start(table: Arc<ModuleTable>, registry: &Arc<Registry>) {
    let Some(resource) = registry.resolve(super::module_object::GROUP, VERSION, PLURAL) else {
        tracing::error!("strategymodules are not served; StrategyModule objects are not followed");
        return;
    };
    let weak = Arc::downgrade(registry);
    tokio::spawn(async move {
        let mut follower = Follower {
            table,
            registry: weak,
            seen: HashMap::new(),
        };
        follower.follow(resource).await;
    });
}

struct Follower {
    table: Arc<ModuleTable>,
    registry: Weak<Registry>,
    /// Object name → (digest, group, kind) last offered to the table, so the status writes this
    /// follower makes (which come back as MODIFIED events) do not reload anything.
    seen: HashMap<String, (String, String, String)>,
}

fn name_of(obj: &Value) -> String {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl Follower {
    /// Consumes the informer's events (and the table's, to retry refused versions) until the
    /// registry is dropped.
    async fn follow(&mut self, resource: ServedResource) {
        let storage = resource.store.storage().clone();
        let mut events = Box::pin(informer(
            storage,
            resource.def.key_prefix(),
            InformerConfig::default(),
        ));
        let mut table_events = self.table.subscribe();
        let mut listing = Vec::new();
        loop {
            if self.registry.strong_count() == 0 {
                return;
            }
            tokio::select! {
                event = events.next() => match event {
                    Some(InformerEvent::Init) => listing.clear(),
                    Some(InformerEvent::InitApply(o)) => listing.push(o.to_value()),
                    Some(InformerEvent::InitDone { .. }) => {
                        let listed = std::mem::take(&mut listing);
                        self.replace_all(&resource, &listed).await;
                    }
                    Some(InformerEvent::Apply(o)) => self.offer(&resource, &o.to_value()).await,
                    Some(InformerEvent::Delete(o)) => self.remove(&name_of(&o.to_value())),
                    Some(InformerEvent::Progress(_)) => {}
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
                        self.retry_rejected(&resource).await;
                    }
                }
            }
        }
    }

    /// A (re)list: unloads the modules of objects gone, offers every listed one.
    async fn replace_all(&mut self, resource: &ServedResource, listed: &[Value]) {
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
            self.offer(resource, obj).await;
        }
    }

    /// Offers again every object whose version was refused: a module that unloaded may have
    /// released the resource it was refused for (e.g. its file left the strategy directory).
    async fn retry_rejected(&mut self, resource: &ServedResource) {
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
            let scope = RequestScope {
                version: VERSION.into(),
                request_id: "strategy-module-retry".into(),
                ..Default::default()
            };
            let opts = crate::storage::GetOptions {
                resource_version: "0".into(),
                ..Default::default()
            };
            match resource.store.get(&scope, &name, opts).await {
                Ok(obj) => {
                    tracing::info!(object = %name, "offering a refused strategy module again");
                    self.seen.remove(&name);
                    self.offer(resource, &obj).await;
                }
                Err(e) => {
                    tracing::warn!(object = %name, error = %e, "could not reread a strategy module")
                }
            }
        }
    }

    fn remove(&mut self, name: &str) {
        self.seen.remove(name);
        self.table.unload(&source_name(name));
    }

    /// Loads the object's module unless this version was already offered, then brings the
    /// object's status in line with the table's.
    async fn offer(&mut self, resource: &ServedResource, obj: &Value) {
        let name = name_of(obj);
        let source = source_name(&name);
        let status = match ModuleSpec::from_object(obj) {
            Err(errors) => {
                // Admission refuses such specs; one stored before that rule is reported, not loaded.
                let reason = errors
                    .iter()
                    .map(|e| format!("{}: {}", e.field, e.detail))
                    .collect::<Vec<_>>()
                    .join("; ");
                rejected_status(obj, &reason)
            }
            Ok(spec) => {
                let offered = (spec.digest.clone(), spec.group.clone(), spec.kind.clone());
                if self.seen.get(&name) != Some(&offered) {
                    self.seen.insert(name.clone(), offered);
                    let table = self.table.clone();
                    let src = source.clone();
                    let loaded = tokio::task::spawn_blocking(move || {
                        table
                            .load_checked(&src, &spec.bytes, &|m| binds(m, &spec.group, &spec.kind))
                    })
                    .await;
                    if let Err(e) = loaded {
                        tracing::error!(source, "loading a strategy module panicked: {e}");
                    }
                }
                match self.table.status(&source) {
                    Some(s) => status_of(obj, &s),
                    None => return,
                }
            }
        };
        if let Err(e) = write_status(resource, &name, status).await {
            if !e.is_not_found() {
                tracing::warn!(source, error = %e, "could not write a strategy module's status");
            }
        }
    }
}

/// The object's module must declare the resource the object binds it to.
fn binds(module: &StrategyModule, group: &str, kind: &str) -> Result<(), String> {
    let declared = &module.manifest().resources;
    if declared.iter().any(|r| r.group == group && r.kind == kind) {
        return Ok(());
    }
    let names: Vec<String> = declared
        .iter()
        .map(|r| format!("{}/{}", r.group, r.kind))
        .collect();
    Err(format!(
        "spec.resource is {group}/{kind} but the module declares only [{}]",
        names.join(", ")
    ))
}

fn resource_json(r: &ResourceInfo) -> Value {
    json!({
        "group": r.group,
        "version": r.version,
        "kind": r.kind,
        "plural": r.plural,
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
    })
}

fn condition(obj: &Value, active: bool, reason: &str, message: &str) -> Value {
    let status = if active { "True" } else { "False" };
    // The transition time moves only when the condition's status does.
    let previous = obj
        .pointer("/status/conditions/0")
        .filter(|c| c["status"] == status)
        .and_then(|c| c.get("lastTransitionTime"))
        .cloned()
        .unwrap_or_else(|| json!(now_rfc3339()));
    json!({"type": "Active", "status": status, "reason": reason, "message": message, "lastTransitionTime": previous})
}

fn status_of(obj: &Value, s: &ModuleStatus) -> Value {
    let active = s.state == ModuleState::Active;
    let (phase, reason, message) = match s.state {
        ModuleState::Active => (
            "Active",
            "Loaded",
            "the module serves its resources".to_owned(),
        ),
        ModuleState::Rejected => ("Rejected", "Rejected", s.reason.clone().unwrap_or_default()),
        ModuleState::Unloaded => ("Unloaded", "Unloaded", "the module was unloaded".to_owned()),
    };
    let mut status = json!({
        "phase": phase,
        "observedGeneration": obj.pointer("/metadata/generation").cloned().unwrap_or(json!(0)),
        "digest": format!("sha256:{}", s.digest),
        "resources": s.resources.iter().map(resource_json).collect::<Vec<_>>(),
        "conditions": [condition(obj, active, reason, &message)],
    });
    if let Some(m) = &s.module {
        status["module"] = json!(m);
    }
    if let Some(d) = &s.digest_in_force {
        status["digestInForce"] = json!(format!("sha256:{d}"));
    }
    if let Some(r) = &s.reason {
        status["reason"] = json!(r);
    }
    status
}

fn rejected_status(obj: &Value, reason: &str) -> Value {
    json!({
        "phase": "Rejected",
        "observedGeneration": obj.pointer("/metadata/generation").cloned().unwrap_or(json!(0)),
        "reason": reason,
        "conditions": [condition(obj, false, "Rejected", reason)],
    })
}

/// Writes `status` unless the object already has it (so replicas agreeing write once).
async fn write_status(
    resource: &ServedResource,
    name: &str,
    status: Value,
) -> crate::registry::Result<()> {
    let scope = RequestScope {
        version: VERSION.into(),
        request_id: "strategy-module-status".into(),
        field_manager: "strategy-host".into(),
        subresource: Some("status".into()),
        ..Default::default()
    };
    let current = resource
        .store
        .get(&scope, name, crate::storage::GetOptions::default())
        .await?;
    if current.get("status") == Some(&status) {
        return Ok(());
    }
    let input: UpdateFn = Arc::new(move |current: Option<&Value>| {
        let mut next = current.cloned().unwrap_or(Value::Null);
        if next.is_object() {
            next["status"] = status.clone();
        }
        Ok(next)
    });
    resource.store.update(&scope, name, input).await.map(|_| ())
}
