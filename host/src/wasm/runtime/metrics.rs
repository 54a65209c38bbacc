//! Per-module call, failure and `apply`-refusal counters, rendered in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::error::FailureKind;

/// Why the `apply` host function refused a call (the metrics label of each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApplyRefusal {
    // The discriminants index the counters: keep them 0.. in `ALL`'s order.
    /// The write would nest After hooks deeper than `RuntimeConfig::max_apply_depth`.
    Depth,
    /// The object's group and kind are not among the resources the manifest says its hooks apply.
    Undeclared,
    /// `apply` was called outside an After hook (from a before-write phase).
    OutsideHook,
}

impl ApplyRefusal {
    /// Every reason, in the order metrics list them.
    pub const ALL: [ApplyRefusal; 3] = [Self::Depth, Self::Undeclared, Self::OutsideHook];

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Depth => "depth",
            Self::Undeclared => "undeclared",
            Self::OutsideHook => "outside_hook",
        }
    }
}

/// The counters of one module.
#[derive(Debug, Default)]
pub struct ModuleCounters {
    calls: AtomicU64,
    failures: [AtomicU64; FailureKind::ALL.len()],
    hook_failures: AtomicU64,
    apply_refused: [AtomicU64; ApplyRefusal::ALL.len()],
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

    /// `apply` calls the host refused for one reason.
    pub fn apply_refused(&self, reason: ApplyRefusal) -> u64 {
        self.apply_refused[reason as usize].load(Ordering::Relaxed)
    }

    pub(crate) fn record_apply_refused(&self, reason: ApplyRefusal) {
        self.apply_refused[reason as usize].fetch_add(1, Ordering::Relaxed);
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
        out.push_str(
            "# HELP strategy_apply_refused_total apply calls from After hooks the host refused.\n",
        );
        out.push_str("# TYPE strategy_apply_refused_total counter\n");
        for (name, c) in modules.iter() {
            for reason in ApplyRefusal::ALL {
                let _ = writeln!(
                    out,
                    "strategy_apply_refused_total{{module={name:?},reason=\"{}\"}} {}",
                    reason.label(),
                    c.apply_refused(reason)
                );
            }
        }
        out
    }
}
