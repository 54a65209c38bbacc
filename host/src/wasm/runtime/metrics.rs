//! Per-module call and failure counters, rendered in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::error::FailureKind;

/// The counters of one module.
#[derive(Debug, Default)]
pub struct ModuleCounters {
    calls: AtomicU64,
    failures: [AtomicU64; FailureKind::ALL.len()],
    hook_failures: AtomicU64,
}

impl ModuleCounters {
    /// Calls made (one per registry phase).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Failed calls of one kind.
    pub fn failures(&self, kind: FailureKind) -> u64 {
        self.failures[index(kind)].load(Ordering::Relaxed)
    }

    /// Failed calls of every kind.
    pub fn total_failures(&self) -> u64 {
        FailureKind::ALL.iter().map(|k| self.failures(*k)).sum()
    }

    /// After hooks that failed (the write stood).
    pub fn hook_failures(&self) -> u64 {
        self.hook_failures.load(Ordering::Relaxed)
    }

    pub(crate) fn record_call(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_failure(&self, kind: FailureKind, in_hook: bool) {
        self.failures[index(kind)].fetch_add(1, Ordering::Relaxed);
        if in_hook {
            self.hook_failures.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn index(kind: FailureKind) -> usize {
    FailureKind::ALL
        .iter()
        .position(|k| *k == kind)
        .expect("listed")
}

/// The counters of every module, by module name.
#[derive(Debug, Default)]
pub struct Metrics {
    modules: RwLock<BTreeMap<String, Arc<ModuleCounters>>>,
}

impl Metrics {
    /// The counters of a module (created on first use).
    pub fn module(&self, name: &str) -> Arc<ModuleCounters> {
        if let Some(c) = self.modules.read().expect("metrics lock").get(name) {
            return c.clone();
        }
        self.modules
            .write()
            .expect("metrics lock")
            .entry(name.to_owned())
            .or_default()
            .clone()
    }

    /// Every counter in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let modules = self.modules.read().expect("metrics lock");
        let mut out = String::new();
        out.push_str("# HELP strategy_calls_total Calls into wasm strategy modules.\n");
        out.push_str("# TYPE strategy_calls_total counter\n");
        for (name, c) in modules.iter() {
            let _ = writeln!(out, "strategy_calls_total{{module={name:?}}} {}", c.calls());
        }
        out.push_str(
            "# HELP strategy_call_failures_total Failed calls into wasm strategy modules.\n",
        );
        out.push_str("# TYPE strategy_call_failures_total counter\n");
        for (name, c) in modules.iter() {
            for kind in FailureKind::ALL {
                let _ = writeln!(
                    out,
                    "strategy_call_failures_total{{module={name:?},reason=\"{}\"}} {}",
                    kind.label(),
                    c.failures(kind)
                );
            }
        }
        out.push_str("# HELP strategy_hook_failures_total After hooks that failed.\n");
        out.push_str("# TYPE strategy_hook_failures_total counter\n");
        for (name, c) in modules.iter() {
            let _ = writeln!(
                out,
                "strategy_hook_failures_total{{module={name:?}}} {}",
                c.hook_failures()
            );
        }
        out
    }
}
