//! What a staged candidate would have done differently: counts per kind of difference (for live
//! requests and for the replay over stored objects), a bounded sample of differences, latency of
//! both versions side by side, as JSON for status and `/debug/strategies`, and as Prometheus
//! series.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use serde_json::{json, Map, Value};

use super::outcome::{differences, Difference, DifferenceKind, Outcome, Verb};

/// How many differences a report keeps as examples (the newest).
const SAMPLES: usize = 20;
/// How many latencies per version the percentiles are taken over (the newest).
const LATENCY_WINDOW: usize = 2048;

/// The `p` quantile (nearest rank) of `latencies`; `None` when there are none.
pub fn percentile(latencies: impl Iterator<Item = Duration>, p: f64) -> Option<Duration> {
    let mut v: Vec<Duration> = latencies.collect();
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let i = ((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1;
    Some(v[i])
}

/// Where an evaluation came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A live request (shadow mode).
    Request,
    /// The replay over stored objects at staging.
    Replay,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Replay => "replay",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

const VERBS: [Verb; 3] = [Verb::Create, Verb::Update, Verb::Delete];

fn verb_index(v: Verb) -> usize {
    v as usize
}

fn kind_index(k: DifferenceKind) -> usize {
    DifferenceKind::ALL
        .iter()
        .position(|x| *x == k)
        .expect("every kind is listed")
}

/// Counters of one origin: evaluations and differences per verb and kind.
#[derive(Debug, Default)]
struct Counts {
    evaluated: AtomicU64,
    by_verb: [[AtomicU64; DifferenceKind::ALL.len()]; 3],
}

impl Counts {
    fn kind_total(&self, k: DifferenceKind) -> u64 {
        self.by_verb
            .iter()
            .map(|v| v[kind_index(k)].load(Ordering::Relaxed))
            .sum()
    }

    fn json(&self) -> Value {
        let kinds = |count: &dyn Fn(DifferenceKind) -> u64| -> Value {
            DifferenceKind::ALL
                .iter()
                .map(|k| (k.as_str().to_owned(), json!(count(*k))))
                .collect::<Map<_, _>>()
                .into()
        };
        let by_verb: Map<String, Value> = VERBS
            .iter()
            .map(|v| {
                let row = &self.by_verb[verb_index(*v)];
                let counts = kinds(&|k| row[kind_index(k)].load(Ordering::Relaxed));
                (v.verb().to_owned(), counts)
            })
            .collect();
        json!({
            "evaluated": self.evaluated.load(Ordering::Relaxed),
            "differences": kinds(&|k| self.kind_total(k)),
            "byVerb": by_verb,
        })
    }
}

/// One recorded difference.
#[derive(Debug, Clone)]
struct Sample {
    origin: Origin,
    verb: Verb,
    object: String,
    difference: Difference,
}

/// The Prometheus series of rollouts, shared by every candidate.
#[derive(Debug)]
pub struct RolloutMetrics {
    evaluations: Family<EvaluationLabels, Counter>,
    differences: Family<DifferenceLabels, Counter>,
    rollbacks: Family<SourceLabels, Counter>,
    latency: Family<LatencyLabels, Histogram, fn() -> Histogram>,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EvaluationLabels {
    source: String,
    digest: String,
    origin: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DifferenceLabels {
    source: String,
    digest: String,
    origin: &'static str,
    difference: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    source: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    source: String,
    digest: String,
    version: &'static str,
}

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_01, 4.0, 10))
}

impl Default for RolloutMetrics {
    fn default() -> Self {
        Self {
            evaluations: Family::default(),
            differences: Family::default(),
            rollbacks: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
        }
    }
}

impl RolloutMetrics {
    /// Registers `strategy_rollout_evaluations_total`, `strategy_rollout_differences_total`,
    /// `strategy_rollout_rollbacks_total` and `strategy_rollout_call_duration_seconds`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "strategy_rollout_evaluations",
            "Evaluations of staged module versions beside the version in force, by origin",
            self.evaluations.clone(),
        );
        registry.register(
            "strategy_rollout_differences",
            "Where a staged module version differed from the version in force, by kind",
            self.differences.clone(),
        );
        registry.register(
            "strategy_rollout_rollbacks",
            "Canary versions rolled back by the host",
            self.rollbacks.clone(),
        );
        registry.register(
            "strategy_rollout_call_duration_seconds",
            "Call latency of the version in force and of the staged version, same requests",
            self.latency.clone(),
        );
    }

    /// Counts a rollback of `source`'s candidate.
    pub fn record_rollback(&self, source: &str) {
        self.rollbacks
            .get_or_create(&SourceLabels {
                source: source.to_owned(),
            })
            .inc();
    }
}

/// The report of one staged candidate (one source, one digest).
#[derive(Debug)]
pub struct RolloutReport {
    source: String,
    digest: String,
    counts: [Counts; 2],
    skipped: AtomicU64,
    replayed_objects: AtomicU64,
    replay_state: Mutex<&'static str>,
    samples: Mutex<VecDeque<Sample>>,
    latency: Mutex<[VecDeque<Duration>; 2]>,
    metrics: std::sync::Arc<RolloutMetrics>,
}

impl RolloutReport {
    /// An empty report of `source`'s candidate `digest`.
    pub fn new(source: &str, digest: &str, metrics: std::sync::Arc<RolloutMetrics>) -> Self {
        Self {
            source: source.to_owned(),
            digest: digest.to_owned(),
            counts: Default::default(),
            skipped: AtomicU64::new(0),
            replayed_objects: AtomicU64::new(0),
            replay_state: Mutex::new("Pending"),
            samples: Mutex::default(),
            latency: Mutex::default(),
            metrics,
        }
    }

    /// Compares the candidate's outcome with the in-force one for the same input and records
    /// the differences (returned too).
    pub fn record(
        &self,
        origin: Origin,
        verb: Verb,
        object: &str,
        in_force: &Outcome,
        candidate: &Outcome,
    ) -> Vec<Difference> {
        let found = differences(in_force, candidate);
        let counts = &self.counts[origin.index()];
        counts.evaluated.fetch_add(1, Ordering::Relaxed);
        self.metrics
            .evaluations
            .get_or_create(&EvaluationLabels {
                source: self.source.clone(),
                digest: self.digest.clone(),
                origin: origin.as_str(),
            })
            .inc();
        for d in &found {
            counts.by_verb[verb_index(verb)][kind_index(d.kind)].fetch_add(1, Ordering::Relaxed);
            self.metrics
                .differences
                .get_or_create(&DifferenceLabels {
                    source: self.source.clone(),
                    digest: self.digest.clone(),
                    origin: origin.as_str(),
                    difference: d.kind.as_str(),
                })
                .inc();
        }
        if !found.is_empty() {
            let mut samples = self.samples.lock().expect("samples");
            for d in &found {
                if samples.len() == SAMPLES {
                    samples.pop_front();
                }
                samples.push_back(Sample {
                    origin,
                    verb,
                    object: object.to_owned(),
                    difference: d.clone(),
                });
            }
        }
        if origin == Origin::Request {
            self.record_latency(in_force.latency, candidate.latency);
        }
        found
    }

    fn record_latency(&self, in_force: Duration, candidate: Duration) {
        {
            let mut windows = self.latency.lock().expect("latency");
            for (window, value) in windows.iter_mut().zip([in_force, candidate]) {
                if window.len() == LATENCY_WINDOW {
                    window.pop_front();
                }
                window.push_back(value);
            }
        }
        for (version, value) in [("inForce", in_force), ("candidate", candidate)] {
            self.metrics
                .latency
                .get_or_create(&LatencyLabels {
                    source: self.source.clone(),
                    digest: self.digest.clone(),
                    version,
                })
                .observe(value.as_secs_f64());
        }
    }

    /// Counts a live request the candidate could not be run on (too many evaluations in
    /// flight): the report says how many requests it did not see.
    pub fn record_skipped(&self) {
        self.skipped.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks the replay as running, or done after `objects` stored objects.
    pub fn set_replay(&self, state: &'static str, objects: u64) {
        *self.replay_state.lock().expect("replay") = state;
        self.replayed_objects.store(objects, Ordering::Relaxed);
    }

    /// Live requests evaluated.
    pub fn requests_evaluated(&self) -> u64 {
        self.counts[Origin::Request.index()]
            .evaluated
            .load(Ordering::Relaxed)
    }

    /// Differences of one kind seen on live requests.
    pub fn request_differences(&self, kind: DifferenceKind) -> u64 {
        self.counts[Origin::Request.index()].kind_total(kind)
    }

    /// The report as JSON (status and `/debug/strategies`).
    pub fn to_json(&self) -> Value {
        let percentile = |window: &VecDeque<Duration>, p: f64| -> Value {
            json!(percentile(window.iter().copied(), p).map(|d| d.as_micros() as u64))
        };
        let latency = {
            let windows = self.latency.lock().expect("latency");
            let of = |w: &VecDeque<Duration>| json!({"p50Microseconds": percentile(w, 0.5), "p99Microseconds": percentile(w, 0.99)});
            json!({"inForce": of(&windows[0]), "candidate": of(&windows[1])})
        };
        let samples: Vec<Value> = self
            .samples
            .lock()
            .expect("samples")
            .iter()
            .map(|s| {
                json!({
                    "origin": s.origin.as_str(),
                    "verb": s.verb.verb(),
                    "object": s.object,
                    "difference": s.difference.kind.as_str(),
                    "detail": s.difference.detail,
                })
            })
            .collect();
        let mut requests = self.counts[Origin::Request.index()].json();
        requests["skipped"] = json!(self.skipped.load(Ordering::Relaxed));
        let mut replay = self.counts[Origin::Replay.index()].json();
        replay["state"] = json!(*self.replay_state.lock().expect("replay"));
        replay["objects"] = json!(self.replayed_objects.load(Ordering::Relaxed));
        json!({
            "requests": requests,
            "replay": replay,
            "latency": latency,
            "samples": samples,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::strategy::{Admission, FieldError, FieldErrorKind};

    fn outcome(reject: bool, micros: u64) -> Outcome {
        let mut a = Admission::default();
        if reject {
            a.field_errors.push(FieldError {
                kind: FieldErrorKind::Invalid,
                field: "data".into(),
                detail: "bad".into(),
            });
        }
        Outcome {
            result: Ok(a),
            object: Some(json!({})),
            latency: Duration::from_micros(micros),
        }
    }

    #[test]
    fn counts_samples_and_latency() {
        let metrics = Arc::new(RolloutMetrics::default());
        let r = RolloutReport::new("api:m", "abc", metrics.clone());
        for i in 0..30 {
            r.record(
                Origin::Request,
                Verb::Create,
                &format!("ns/o{i}"),
                &outcome(false, 10),
                &outcome(i % 3 == 0, 20),
            );
        }
        r.record(
            Origin::Replay,
            Verb::Update,
            "ns/x",
            &outcome(false, 1),
            &outcome(true, 1),
        );
        let j = r.to_json();
        assert_eq!(j["requests"]["evaluated"], 30);
        assert_eq!(j["requests"]["differences"]["rejects"], 10);
        assert_eq!(j["requests"]["byVerb"]["create"]["rejects"], 10);
        assert_eq!(j["replay"]["differences"]["rejects"], 1);
        assert_eq!(j["replay"]["byVerb"]["update"]["rejects"], 1);
        assert_eq!(j["latency"]["inForce"]["p99Microseconds"], 10);
        assert_eq!(j["latency"]["candidate"]["p50Microseconds"], 20);
        assert_eq!(j["samples"].as_array().unwrap().len(), 11);
        assert_eq!(j["samples"][10]["object"], "ns/x");
        assert_eq!(r.request_differences(DifferenceKind::Rejects), 10);
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(text.contains(
            "strategy_rollout_differences_total{source=\"api:m\",digest=\"abc\",origin=\"request\",difference=\"rejects\"} 10"
        ), "{text}");
    }
}
