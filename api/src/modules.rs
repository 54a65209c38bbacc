//! `/debug/strategies`: every module source's latest version, state and reason (and the report
//! of a version staged beside it), as JSON, so
//! every swap and refusal can be checked without reading the log (their counters and states
//! are in `/metrics`, see `metrics.rs`); and what the first load of modules is still compiling,
//! for `/readyz` and the startup gate.

use std::time::UNIX_EPOCH;

use serde_json::{json, Value};

use super::health::Reply;
use strategy_host_wasm::{ModuleStatus, ModuleTable};

fn status_json(s: &ModuleStatus) -> Value {
    json!({
        "source": s.source,
        "module": s.module,
        "state": s.state.as_str(),
        "digest": s.digest,
        "digestInForce": s.digest_in_force,
        "reason": s.reason,
        "resources": s.resources.iter().map(|r| json!({
            "group": r.group, "version": r.version, "kind": r.kind, "plural": r.plural,
            "namespaced": r.namespaced,
        })).collect::<Vec<_>>(),
        "updatedUnixSeconds": s.updated.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        "rollout": s.staged.as_ref().map(|v| v.to_json()),
    })
}

/// `/debug/strategies`: every source's latest version, state and reason.
/// While the strategy directory's first load runs: what it is compiling (or that it is loading).
pub(crate) fn still_loading(state: &super::state::AppState) -> Option<String> {
    let modules = state.modules.as_ref().filter(|m| m.starting())?;
    let compiling: Vec<String> = modules
        .compiling()
        .iter()
        .map(ToString::to_string)
        .collect();
    Some(match compiling.is_empty() {
        true => "loading the strategy directory".to_owned(),
        false => format!("compiling {}", compiling.join(", ")),
    })
}

/// The answer to a resource request while the strategy directory's first load runs: served
/// before its modules, a request would get the default strategy (no defaults, no validation).
pub(crate) fn starting_gate(state: &super::state::AppState) -> Option<super::status::Status> {
    still_loading(state).map(|loading| {
        super::status::Status::service_unavailable(format!(
            "the server is starting: strategy modules are loading ({loading}); retry shortly"
        ))
    })
}

pub(crate) fn debug_strategies(modules: &ModuleTable) -> Reply {
    let items: Vec<Value> = modules.statuses().iter().map(status_json).collect();
    Reply::Json(200, json!({ "sources": items }))
}
