//! A staged module version beside the version in force: in shadow it is run, after the live
//! call, on its own copy of every request's input and only its differences are recorded; as a
//! canary it serves an evenly spread share of requests and rolls itself back when its failures
//! or latency cross the thresholds.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::Semaphore;

use super::outcome::{evaluate, Outcome, Role, Verb, Version};
use super::report::{percentile, Origin, RolloutMetrics, RolloutReport};
use super::spec::{RolloutMode, RolloutSpec};
use crate::strategy::StrategyContext;
use crate::WasmStrategy;
use strategy_host_wasm_runtime::StrategyModule;

/// Shadow evaluations in flight at once per staged version; a request arriving beyond them is
/// not evaluated (and counted as skipped), so a slow candidate cannot pile up work.
const SHADOW_IN_FLIGHT: usize = 64;

/// What the host does when a staged version rolls back: tell whoever reports status.
pub type RollbackNotice = Box<dyn Fn(Arc<StagedVersion>) + Send + Sync>;

/// Recent canary calls, for the rollback thresholds.
#[derive(Debug, Default)]
struct CanaryWindow {
    served: u64,
    failed: u64,
    recent: VecDeque<(bool, Duration)>,
}

impl CanaryWindow {
    fn p99(&self) -> Option<Duration> {
        percentile(self.recent.iter().map(|(_, d)| *d), 0.99)
    }
}

/// A candidate version of one source's module, staged in shadow or as a canary.
pub struct StagedVersion {
    source: String,
    spec: RolloutSpec,
    strategy: WasmStrategy,
    report: Arc<RolloutReport>,
    in_flight: Arc<Semaphore>,
    requests: AtomicU64,
    canary: Mutex<CanaryWindow>,
    rolled_back: OnceLock<String>,
    metrics: Arc<RolloutMetrics>,
    on_rollback: OnceLock<RollbackNotice>,
}

impl std::fmt::Debug for StagedVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagedVersion")
            .field("source", &self.source)
            .field("digest", &self.digest())
            .field("mode", &self.spec.mode)
            .finish_non_exhaustive()
    }
}

impl StagedVersion {
    /// Stages `strategy` (a version of `source`'s module) with `spec` (Shadow or Canary).
    /// `rolled_back`: the reason this very version was rolled back before (e.g. as recorded in
    /// its object's status by another replica or before a restart): it then never serves.
    pub fn new(
        source: &str,
        spec: RolloutSpec,
        strategy: WasmStrategy,
        metrics: Arc<RolloutMetrics>,
        rolled_back: Option<String>,
    ) -> Self {
        let report = RolloutReport::new(source, strategy.module().digest(), metrics.clone());
        let staged = Self {
            source: source.to_owned(),
            spec,
            strategy,
            report: Arc::new(report),
            in_flight: Arc::new(Semaphore::new(SHADOW_IN_FLIGHT)),
            requests: AtomicU64::new(0),
            canary: Mutex::default(),
            rolled_back: OnceLock::new(),
            metrics,
            on_rollback: OnceLock::new(),
        };
        if let Some(reason) = rolled_back {
            let _ = staged.rolled_back.set(reason);
        }
        staged
    }

    /// Sets what happens when the version rolls itself back (once).
    pub fn on_rollback(&self, notice: RollbackNotice) {
        let _ = self.on_rollback.set(notice);
    }

    /// The staged module.
    pub fn module(&self) -> &Arc<StrategyModule> {
        self.strategy.module()
    }

    /// The staged module's digest.
    pub fn digest(&self) -> &str {
        self.strategy.module().digest()
    }

    /// The rollout it was staged with.
    pub fn spec(&self) -> &RolloutSpec {
        &self.spec
    }

    /// Shadow or Canary.
    pub fn mode(&self) -> RolloutMode {
        self.spec.mode
    }

    /// The staged version as a strategy (for replay).
    pub fn strategy(&self) -> &WasmStrategy {
        &self.strategy
    }

    /// Its report.
    pub fn report(&self) -> &Arc<RolloutReport> {
        &self.report
    }

    /// Why the version was rolled back, if it was.
    pub fn rolled_back(&self) -> Option<&str> {
        self.rolled_back.get().map(String::as_str)
    }

    /// Whether the version still takes part in requests.
    pub fn is_live(&self) -> bool {
        self.rolled_back.get().is_none()
    }

    /// For a canary: whether this request is one of its share. The share is spread evenly (with
    /// weight w%, request n is the canary's when ⌊(n+1)·w/100⌋ > ⌊n·w/100⌋), not in bursts.
    pub fn serves_this_request(&self) -> bool {
        if self.spec.mode != RolloutMode::Canary || !self.is_live() {
            return false;
        }
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let w = u64::from(self.spec.weight_percent);
        (n + 1) * w / 100 > n * w / 100
    }

    /// Records one call the canary served, and rolls it back if that crosses a threshold.
    pub fn record_canary_call(self: &Arc<Self>, failed: bool, latency: Duration) {
        let t = self.spec.rollback;
        let verdict = {
            let mut w = self.canary.lock().expect("canary");
            w.served += 1;
            w.failed += u64::from(failed);
            if w.recent.len() == t.window {
                w.recent.pop_front();
            }
            w.recent.push_back((failed, latency));
            let judged = w.served >= t.min_requests;
            let failures = w.recent.iter().filter(|(f, _)| *f).count();
            let ratio = failures as f64 / w.recent.len() as f64;
            match w.p99() {
                _ if !judged => None,
                _ if ratio > t.max_failure_ratio => Some(format!(
                    "{failures} of its last {} calls failed ({:.1}%, threshold {:.1}%)",
                    w.recent.len(),
                    ratio * 100.0,
                    t.max_failure_ratio * 100.0
                )),
                Some(p99) if p99 > t.max_latency => Some(format!(
                    "its p99 call latency over its last {} calls is {:.1} ms (threshold {:.1} ms)",
                    w.recent.len(),
                    p99.as_secs_f64() * 1000.0,
                    t.max_latency.as_secs_f64() * 1000.0
                )),
                _ => None,
            }
        };
        if let Some(reason) = verdict {
            self.roll_back(reason);
        }
    }

    /// Stops the version serving because it was rolled back elsewhere (another replica, or
    /// this one before a restart), with the reason recorded there.
    pub fn halt(&self, reason: &str) {
        if self.rolled_back.set(reason.to_owned()).is_ok() {
            tracing::warn!(source = %self.source, digest = %self.digest(), %reason, "canary strategy module was rolled back by another replica");
        }
    }

    fn roll_back(self: &Arc<Self>, reason: String) {
        if self.rolled_back.set(reason.clone()).is_err() {
            return;
        }
        tracing::warn!(
            source = %self.source,
            digest = %self.digest(),
            %reason,
            "canary strategy module rolled back; the version in force serves every request again"
        );
        self.metrics.record_rollback(&self.source);
        if let Some(notice) = self.on_rollback.get() {
            notice(self.clone());
        }
    }

    /// Runs the staged version in `role` on `input` (`old` for updates) beside the live call
    /// whose outcome is `in_force`, on a task of its own, and records where they differ. Returns
    /// at once.
    pub fn shadow(
        self: &Arc<Self>,
        role: Role,
        ctx: &StrategyContext,
        verb: Verb,
        input: Value,
        old: Option<Value>,
        in_force: Outcome,
    ) {
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            self.report.record_skipped();
            return;
        };
        let (me, ctx) = (self.clone(), ctx.clone());
        tokio::spawn(async move {
            let object = object_ref(&input);
            let candidate = evaluate(&me.strategy, &role, &ctx, verb, input, old.as_ref()).await;
            me.report
                .record(Origin::Request, verb, &object, &in_force, &candidate);
            drop(permit);
        });
    }

    /// Replays the staged version in `role` over stored objects (each as a create, and as an
    /// update onto itself) beside `in_force`, recording the differences.
    pub async fn replay(
        &self,
        in_force: &dyn Version,
        role: &Role,
        ctx: &StrategyContext,
        objects: &[Value],
    ) {
        for obj in objects {
            let object = object_ref(obj);
            for verb in [Verb::Create, Verb::Update] {
                let old = (verb == Verb::Update).then_some(obj);
                let a = evaluate(in_force, role, ctx, verb, obj.clone(), old).await;
                let b = evaluate(&self.strategy, role, ctx, verb, obj.clone(), old).await;
                self.report.record(Origin::Replay, verb, &object, &a, &b);
            }
        }
    }

    /// The state, counts and samples, as JSON (status and `/debug/strategies`).
    pub fn to_json(&self) -> Value {
        let state = match (self.rolled_back(), self.spec.mode) {
            (Some(_), _) => "RolledBack",
            (None, RolloutMode::Canary) => "Canary",
            (None, _) => "Shadowing",
        };
        let mut out = self.report.to_json();
        out["mode"] = json!(self.spec.mode.as_str());
        out["state"] = json!(state);
        out["candidateDigest"] = json!(format!("sha256:{}", self.digest()));
        out["candidateModule"] = json!(self.module().name());
        if let Some(reason) = self.rolled_back() {
            out["reason"] = json!(reason);
        }
        if self.spec.mode == RolloutMode::Canary {
            let w = self.canary.lock().expect("canary");
            out["weightPercent"] = json!(self.spec.weight_percent);
            out["canary"] = json!({"served": w.served, "failed": w.failed});
            out["latency"]["canary"] =
                json!({"p99Microseconds": w.p99().map(|d| d.as_micros() as u64)});
        }
        out
    }
}

/// `namespace/name` (or `name`) of an object, for samples; a create by `generateName` shows the
/// prefix and `*`.
pub fn object_ref(obj: &Value) -> String {
    let text = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let name = match text("/metadata/name") {
        "" => format!("{}*", text("/metadata/generateName")),
        n => n.to_owned(),
    };
    match text("/metadata/namespace") {
        "" => name,
        ns => format!("{ns}/{name}"),
    }
}
