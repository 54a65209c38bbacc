//! The status a `StrategyModule` object shows: the table's status of its source in Kubernetes'
//! shape (phase, digests, conditions), each replica's rollout report folded with the others', and
//! the write that stores it only when it changed.

use std::sync::Arc;

use serde_json::{json, Value};

use super::super::module_object::{GROUP, PLURAL, VERSION};
use super::replica_id;
use crate::strategy::ResourceInfo;
use crate::{ModuleState, ModuleStatus};
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::system_fields::{self, meta_str, transition_time};
use strategy_host_registry::Registry;

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
    let mut condition =
        json!({"type": "Active", "status": status, "reason": reason, "message": message});
    condition["lastTransitionTime"] =
        transition_time(system_fields::condition(obj, "Active"), &condition);
    condition
}

pub(super) fn status_of(obj: &Value, s: &ModuleStatus) -> Value {
    let active = s.state == ModuleState::Active;
    let (phase, reason, message) = match s.state {
        ModuleState::Active => (
            "Active",
            "Loaded",
            "the module serves its resources".to_owned(),
        ),
        ModuleState::Rejected => ("Rejected", "Rejected", s.reason.clone().unwrap_or_default()),
        ModuleState::Unloaded => ("Unloaded", "Unloaded", "the module was unloaded".to_owned()),
        ModuleState::Staged => (
            "Staged",
            "Staged",
            "no version serves yet; one is staged (see rollout)".to_owned(),
        ),
    };
    let mut status = json!({
        "phase": phase,
        "observedGeneration": obj.pointer("/metadata/generation").cloned().unwrap_or(json!(0)),
        "resources": s.resources.iter().map(resource_json).collect::<Vec<_>>(),
        "conditions": [condition(obj, active, reason, &message)],
    });
    if !s.digest.is_empty() {
        status["digest"] = json!(format!("sha256:{}", s.digest));
    }
    if let Some(m) = &s.module {
        status["module"] = json!(m);
    }
    if let Some(d) = &s.digest_in_force {
        status["digestInForce"] = json!(format!("sha256:{d}"));
    }
    if let Some(r) = &s.reason {
        status["reason"] = json!(r);
    }
    if let Some(v) = &s.staged {
        let mut rollout = v.to_json();
        // What this replica saw goes under its name; the rest is the same on every replica.
        let mine: serde_json::Map<String, Value> = rollout
            .as_object_mut()
            .map(|r| {
                PER_REPLICA
                    .iter()
                    .filter_map(|k| r.remove(*k).map(|v| (k.to_string(), v)))
                    .collect()
            })
            .unwrap_or_default();
        rollout["replicas"] = json!({ replica_id(): mine });
        status["rollout"] = rollout;
    }
    status
}

/// The members of a staged version's report each replica records for itself.
const PER_REPLICA: [&str; 5] = ["requests", "replay", "canary", "latency", "samples"];

/// How many differences `status.rollout.samples` shows, over all replicas.
const STATUS_SAMPLES: usize = 20;

/// The reason recorded in the object's status when its canary version `digest` was rolled back.
pub(super) fn rolled_back_here(obj: &Value, digest: &str) -> Option<String> {
    let rollout = obj.pointer("/status/rollout")?;
    let same = rollout["candidateDigest"].as_str() == Some(&format!("sha256:{digest}"));
    (same && rollout["state"] == "RolledBack")
        .then(|| rollout["reason"].as_str().unwrap_or_default().to_owned())
}

/// Folds the other replicas' entries of the stored `status.rollout` into this replica's
/// `status.rollout` (same candidate only) and derives what every replica agrees on, so replicas
/// with the same view write nothing: `requests` and `canary` summed over replicas, `replay` and
/// `samples` from the replicas in name order (a replay is the same on each), and a rollback any
/// replica recorded.
pub(super) fn merge_replicas(stored: Option<&Value>, status: &mut Value) {
    let Some(rollout) = status.get_mut("rollout") else {
        return;
    };
    let stored = stored
        .and_then(|s| s.get("rollout"))
        .filter(|r| r["candidateDigest"] == rollout["candidateDigest"]);
    if let Some(stored) = stored {
        if let Some(others) = stored["replicas"].as_object() {
            for (id, entry) in others {
                if id != replica_id() {
                    rollout["replicas"][id] = entry.clone();
                }
            }
        }
        if stored["state"] == "RolledBack" && rollout["state"] != "RolledBack" {
            rollout["state"] = json!("RolledBack");
            rollout["reason"] = stored["reason"].clone();
        }
    }
    // A map keeps its keys sorted: replicas in name order.
    let entries: Vec<Value> = rollout["replicas"]
        .as_object()
        .map(|m| m.values().cloned().collect())
        .unwrap_or_default();
    for part in ["requests", "canary"] {
        let mut total = Value::Null;
        for e in &entries {
            add_counts(&mut total, &e[part]);
        }
        if !total.is_null() {
            rollout[part] = total;
        }
    }
    let replay = entries
        .iter()
        .map(|e| &e["replay"])
        .find(|r| r["state"] == "Done")
        .or_else(|| entries.first().map(|e| &e["replay"]));
    if let Some(replay) = replay.cloned() {
        rollout["replay"] = replay;
    }
    let samples: Vec<Value> = entries
        .iter()
        .filter_map(|e| e["samples"].as_array())
        .flatten()
        .take(STATUS_SAMPLES)
        .cloned()
        .collect();
    rollout["samples"] = json!(samples);
}

/// Adds the numbers of `more` into `total`, member by member (objects recursively; a member
/// that is not a whole number is taken from the first replica that has one).
fn add_counts(total: &mut Value, more: &Value) {
    match (total, more) {
        (_, Value::Null) => {}
        (t @ Value::Null, m) => *t = m.clone(),
        (Value::Object(t), Value::Object(m)) => {
            for (k, v) in m {
                add_counts(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (t @ Value::Number(_), Value::Number(m)) => {
            if let (Some(a), Some(b)) = (t.as_u64(), m.as_u64()) {
                *t = json!(a + b);
            }
        }
        _ => {}
    }
}

pub(super) fn rejected_status(obj: &Value, reason: &str) -> Value {
    json!({
        "phase": "Rejected",
        "observedGeneration": obj.pointer("/metadata/generation").cloned().unwrap_or(json!(0)),
        "reason": reason,
        "conditions": [condition(obj, false, "Rejected", reason)],
    })
}

/// Reads the object once, makes its status with `status_for`, and writes it (with the other
/// replicas' rollout entries folded in) unless the object already has it (so replicas agreeing
/// write once).
pub(super) async fn write_status(
    registry: &Arc<Registry>,
    name: &str,
    status_for: impl Fn(&Value) -> Value,
) -> strategy_host_registry::Result<()> {
    let client = Client::new(registry, "strategy-host").with_request_id("strategy-module-status");
    let object = ObjectRef::new(GROUP, VERSION, PLURAL, None, name);
    let Some(current) = client.get(&object).await? else {
        return Ok(());
    };
    let status = status_for(&current);
    let mut merged = status.clone();
    merge_replicas(current.get("status"), &mut merged);
    if current.get("status") == Some(&merged) {
        return Ok(());
    }
    let uid = meta_str(&current, "uid").unwrap_or_default();
    client
        .update(&object, uid, Some("status"), move |next| {
            let mut status = status.clone();
            merge_replicas(next.get("status"), &mut status);
            next["status"] = status;
            true
        })
        .await
}
