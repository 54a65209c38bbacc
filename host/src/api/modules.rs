//! The strategy runtime seen over HTTP: `/metrics` (per-module call and failure counters and one
//! `strategy_module_state` series per source, in the Prometheus text format) and
//! `/debug/strategies` (every source's latest version, state and reason, as JSON), so every swap
//! and refusal can be checked without reading the log.

use std::fmt::Write as _;
use std::time::UNIX_EPOCH;

use serde_json::{json, Value};

use super::health::Reply;
use crate::wasm::{ModuleState, ModuleStatus, ModuleTable};

fn state_label(s: ModuleState) -> &'static str {
    match s {
        ModuleState::Active => "Active",
        ModuleState::Rejected => "Rejected",
        ModuleState::Unloaded => "Unloaded",
    }
}

fn status_json(s: &ModuleStatus) -> Value {
    json!({
        "source": s.source,
        "module": s.module,
        "state": state_label(s.state),
        "digest": s.digest,
        "digestInForce": s.digest_in_force,
        "reason": s.reason,
        "resources": s.resources.iter().map(|r| json!({
            "group": r.group, "version": r.version, "kind": r.kind, "plural": r.plural,
            "namespaced": r.namespaced,
        })).collect::<Vec<_>>(),
        "updatedUnixSeconds": s.updated.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
    })
}

/// `/metrics`: the runtime's counters and one `strategy_module_state` series per source.
pub fn metrics(modules: &ModuleTable) -> Reply {
    let mut out = modules.runtime().metrics().render();
    out.push_str(
        "# HELP strategy_module_state The latest version of each module source: 1 for its state.\n",
    );
    out.push_str("# TYPE strategy_module_state gauge\n");
    for s in modules.statuses() {
        let _ = writeln!(
            out,
            "strategy_module_state{{source={:?},state=\"{}\",digest=\"{}\"}} 1",
            s.source,
            state_label(s.state),
            s.digest
        );
    }
    Reply::Text(200, out)
}

/// `/debug/strategies`: every source's latest version, state and reason.
pub fn debug_strategies(modules: &ModuleTable) -> Reply {
    let items: Vec<Value> = modules.statuses().iter().map(status_json).collect();
    Reply::Json(200, json!({ "sources": items }))
}
