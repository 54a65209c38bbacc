//! API Priority and Fairness: each request that is not long-running is classified into a
//! priority level and a flow (its user), its work is estimated in seats, and it waits in its
//! flow's queue until the level has the seats free, so one user flooding the server with heavy
//! lists cannot push another user's small writes out. Requests of the exempt level
//! (`system:masters`, health probes) are bounded only by `--max-requests-inflight`. A request
//! whose queue is full, or that waited a quarter of the request timeout, is answered 429 with
//! `Retry-After`, as kube-apiserver does.

mod queue_set;
mod schemas;

use std::sync::Arc;
use std::time::{Duration, Instant};

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry as MetricsRegistry;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use self::queue_set::{QueueSet, Seats};
pub use self::schemas::{classify, Classification};
use self::schemas::{nominal_seats, LEVELS};
use super::metrics::ScrapedFrom;
use super::query::Query;
use super::route::{Route, Verb};
use super::status::Status;
use crate::registry::Registry;

/// Requests a flow may have waiting (Kubernetes' `queueLengthLimit` of its suggested levels).
const QUEUE_LENGTH_LIMIT: usize = 50;
/// The most seats one request takes (kube-apiserver's default maximum).
const MAX_SEATS: u32 = 10;
/// Objects a list reads per seat it takes.
const OBJECTS_PER_SEAT: usize = 100;

/// The priority levels and what they admit.
pub struct FlowControl {
    exempt: Arc<Semaphore>,
    /// The queued levels' queue sets, by index into `LEVELS` (`None` for exempt).
    levels: Vec<Option<Arc<QueueSet>>>,
    wait_limit: Duration,
    metrics: FlowMetrics,
}

/// A request's admission: held while it executes.
pub enum Admitted {
    /// An exempt request's in-flight slot.
    Exempt(#[allow(dead_code)] OwnedSemaphorePermit),
    /// A queued level's seats.
    Queued(#[allow(dead_code)] Seats),
}

impl FlowControl {
    /// Levels sharing `total_seats` by their shares (kube-apiserver sums
    /// `--max-requests-inflight` and `--max-mutating-requests-inflight` for it); exempt
    /// requests bounded by `exempt_limit`; a request waits in its queue at most `wait_limit`.
    pub fn new(total_seats: u32, exempt_limit: usize, wait_limit: Duration) -> Self {
        Self {
            exempt: Arc::new(Semaphore::new(exempt_limit.max(1))),
            levels: nominal_seats(total_seats)
                .into_iter()
                .map(|seats| seats.map(|s| QueueSet::new(s, QUEUE_LENGTH_LIMIT)))
                .collect(),
            wait_limit,
            metrics: FlowMetrics::default(),
        }
    }

    /// Waits for `seats` seats for a request classified as `c`.
    ///
    /// # Errors
    /// 429 TooManyRequests (with `Retry-After`) when the flow's queue is full, the wait ran
    /// out, or (exempt) every in-flight slot is taken.
    pub async fn admit(&self, c: &Classification, seats: u32) -> Result<Admitted, Status> {
        let began = Instant::now();
        let admitted = match &self.levels[c.level] {
            None => self
                .exempt
                .clone()
                .try_acquire_owned()
                .map(Admitted::Exempt)
                .map_err(|_| "concurrency-limit"),
            Some(queues) => queues
                .admit(&c.flow, seats, self.wait_limit)
                .await
                .map(Admitted::Queued)
                .map_err(|r| r.reason()),
        };
        self.metrics.observe(c, &admitted, began.elapsed());
        admitted
            .map_err(|_| Status::too_many_requests("Too many requests, please try again later."))
    }

    /// Registers the flow-control metrics (Kubernetes' names) in `registry`.
    pub fn register(self: &Arc<Self>, registry: &mut MetricsRegistry) {
        registry.register(
            "apiserver_flowcontrol_rejected_requests",
            "Requests rejected by API Priority and Fairness",
            self.metrics.rejected.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_request_wait_duration_seconds",
            "Time requests waited in their queue",
            self.metrics.waited.clone(),
        );
        registry.register_collector(ScrapedFrom::new(self, level_gauges));
    }
}

/// The seats a request takes: a list one per hundred objects it reads (as many as the resource
/// holds, or its `limit` when it selects nothing), at most `MAX_SEATS`; anything else one.
pub fn estimate_seats(route: &Route, query: &Query, registry: &Registry) -> u32 {
    let Route::Resource(path, Verb::List) = route else {
        return 1;
    };
    let Some(stored) = registry.stored_objects(&path.group, &path.plural) else {
        return 1;
    };
    let selective =
        query.non_empty("labelSelector").is_some() || query.non_empty("fieldSelector").is_some();
    list_seats(stored, query.number("limit").ok().flatten(), selective)
}

/// The seats of a list over a resource of `stored` objects: a page of `limit` reads no more
/// than that, unless a selector may make it read on to fill the page.
fn list_seats(stored: usize, limit: Option<u64>, selective: bool) -> u32 {
    let limit = limit.filter(|l| *l > 0 && !selective);
    let objects = limit.map_or(stored, |l| {
        stored.min(usize::try_from(l).unwrap_or(usize::MAX))
    });
    (objects.div_ceil(OBJECTS_PER_SEAT) as u32).clamp(1, MAX_SEATS)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RejectedLabels {
    flow_schema: &'static str,
    priority_level: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WaitLabels {
    flow_schema: &'static str,
    priority_level: &'static str,
    execute: &'static str,
}

#[derive(Debug)]
struct FlowMetrics {
    rejected: Family<RejectedLabels, Counter>,
    waited: Family<WaitLabels, Histogram, fn() -> Histogram>,
}

impl Default for FlowMetrics {
    fn default() -> Self {
        Self {
            rejected: Family::default(),
            waited: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0001, 4.0, 10))
            }),
        }
    }
}

impl FlowMetrics {
    fn observe(
        &self,
        c: &Classification,
        admitted: &Result<Admitted, &'static str>,
        waited: Duration,
    ) {
        let (schema, level) = (c.schema, c.level_name());
        if let Err(reason) = admitted {
            self.rejected
                .get_or_create(&RejectedLabels {
                    flow_schema: schema,
                    priority_level: level,
                    reason,
                })
                .inc();
        }
        self.waited
            .get_or_create(&WaitLabels {
                flow_schema: schema,
                priority_level: level,
                execute: if admitted.is_ok() { "true" } else { "false" },
            })
            .observe(waited.as_secs_f64());
    }
}

impl std::fmt::Debug for FlowControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowControl").finish_non_exhaustive()
    }
}

/// Each queued level's limit, queue and seats in use.
fn level_gauges(
    control: &FlowControl,
    encoder: &mut DescriptorEncoder<'_>,
) -> Result<(), std::fmt::Error> {
    type Pick = fn(&QueueSet) -> i64;
    let families: [(&str, &str, Pick); 3] = [
        (
            "apiserver_flowcontrol_nominal_limit_seats",
            "Seats a priority level may use at once",
            |q| i64::from(q.limit()),
        ),
        (
            "apiserver_flowcontrol_current_inqueue_requests",
            "Requests waiting in a priority level's queues",
            |q| q.load().0 as i64,
        ),
        (
            "apiserver_flowcontrol_current_executing_seats",
            "Seats in use by a priority level's executing requests",
            |q| i64::from(q.load().1),
        ),
    ];
    for (name, help, pick) in families {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (level, queues) in LEVELS.iter().zip(&control.levels) {
            if let Some(queues) = queues {
                let labels = vec![("priority_level", level.name)];
                ConstGauge::new(pick(queues)).encode(family.encode_family(&labels)?)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_takes_a_seat_per_hundred_objects_it_reads_up_to_ten() {
        assert_eq!(list_seats(0, None, false), 1);
        assert_eq!(list_seats(250, None, false), 3);
        assert_eq!(list_seats(100_000, None, false), MAX_SEATS);
        // A page reads its limit; with a selector it may read the whole resource to fill it.
        assert_eq!(list_seats(100_000, Some(500), false), 5);
        assert_eq!(list_seats(100_000, Some(500), true), MAX_SEATS);
        assert_eq!(list_seats(50, Some(500), false), 1);
        assert_eq!(list_seats(100_000, Some(0), false), MAX_SEATS);
    }
}
