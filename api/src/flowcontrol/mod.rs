//! API Priority and Fairness: each request that is not long-running is classified by the
//! FlowSchemas into a priority level and a flow, its work is estimated in seats, and it waits in
//! its flow's queue until the level has the seats free, so one user flooding the server with
//! heavy lists cannot push another user's small writes out. The levels and schemas are the
//! `flowcontrol.apiserver.k8s.io/v1` objects, followed as they change (`config.rs`); a level
//! whose seats and queues did not change keeps what waits and runs in it. Requests of exempt
//! levels (`system:masters`, health probes) are bounded only by `--max-requests-inflight`. A
//! request whose queue is full, that waited a quarter of the request timeout, or that a
//! rejecting level cannot start at once, is answered 429 with `Retry-After`, as kube-apiserver
//! does.

mod config;
mod queue_set;

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use futures::StreamExt as _;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry as MetricsRegistry;
use serde_json::{json, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use self::config::Classification;
use self::config::{Config, Limit};
use self::queue_set::{QueueSet, Seats};
use super::metrics::ScrapedFrom;
use super::query::Query;
use super::route::{Route, Verb};
use super::status::Status;
use strategy_host_authorization::Attributes;
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::{EventStreamExt as _, Writer};
use strategy_host_registry::system_fields::{condition, meta_str, set_condition};
use strategy_host_registry::Registry;

/// The API group of the configuration objects.
const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// The most seats one request takes (kube-apiserver's default maximum).
const MAX_SEATS: u32 = 10;
/// Objects a list reads per seat it takes.
const OBJECTS_PER_SEAT: usize = 100;

/// The priority levels and what they admit.
pub struct FlowControl {
    exempt: Arc<Semaphore>,
    /// The seats the limited levels share.
    total_seats: u32,
    /// The configuration in force and its levels' queue sets.
    levels: ArcSwap<Levels>,
    wait_limit: Duration,
    metrics: FlowMetrics,
}

/// A configuration and the queue sets of its levels.
struct Levels {
    config: Config,
    /// By index into the configuration's levels (`None` for an exempt level).
    sets: Vec<Option<Arc<QueueSet>>>,
}

impl Levels {
    /// `config`'s levels sharing `total` seats; a level of `before` with the same seats and
    /// queues keeps its queue set.
    fn new(config: Config, total: u32, before: Option<&Levels>) -> Self {
        let seats = config.nominal_seats(total);
        let sets = config
            .levels
            .iter()
            .zip(seats)
            .map(|(level, seats)| {
                let Limit::Limited {
                    queue_length_limit, ..
                } = level.limit
                else {
                    return None;
                };
                let seats = seats.unwrap_or(1).max(1);
                let kept = before.and_then(|b| b.set(&level.name)).filter(|set| {
                    set.limit() == seats && set.queue_length_limit() == queue_length_limit
                });
                Some(kept.unwrap_or_else(|| QueueSet::new(seats, queue_length_limit)))
            })
            .collect();
        Self { config, sets }
    }

    /// The queue set of the level `name`.
    fn set(&self, name: &str) -> Option<Arc<QueueSet>> {
        let at = self.config.levels.iter().position(|l| &*l.name == name)?;
        self.sets[at].clone()
    }
}

/// The field manager of FlowSchema status writes (kube-apiserver's).
const STATUS_MANAGER: &str = "api-priority-and-fairness-config-consumer-v1";

/// Sets the `Dangling` condition of each of `schemas` whose condition does not say whether
/// its priority level is among `levels`, as kube-apiserver's configuration consumer does (each
/// server writes the same condition; one that finds it set writes nothing).
fn report_dangling(client: &Client, schemas: &[Value], levels: &[Value]) {
    for schema in schemas {
        let level = schema["spec"]["priorityLevelConfiguration"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let found = levels
            .iter()
            .any(|l| meta_str(l, "name") == Some(level.as_str()));
        let (status, reason, message) = match found {
            true => ("False", "Found", format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists")),
            false => ("True", "NotFound", format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object")),
        };
        if condition(schema, "Dangling").is_some_and(|c| {
            c["status"] == status && c["reason"] == reason && c["message"] == message.as_str()
        }) {
            continue;
        }
        let name = meta_str(schema, "name").unwrap_or_default().to_string();
        let uid = meta_str(schema, "uid").unwrap_or_default().to_string();
        let dangling = json!({"type": "Dangling", "status": status, "reason": reason,
            "message": message});
        let client = client.clone();
        tokio::spawn(async move {
            let target = ObjectRef::new(GROUP, "v1", "flowschemas", None, &name);
            let written = client
                .update(&target, &uid, Some("status"), move |fs| {
                    set_condition(fs, dangling.clone())
                })
                .await;
            if let Err(e) = written {
                tracing::debug!(flowschema = %name, error = %e, "could not report the Dangling condition");
            }
        });
    }
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
    /// The levels are Kubernetes' bootstrap ones until [`FlowControl::follow`] lists the
    /// objects.
    pub fn new(total_seats: u32, exempt_limit: usize, wait_limit: Duration) -> Self {
        Self {
            exempt: Arc::new(Semaphore::new(exempt_limit.max(1))),
            total_seats,
            levels: ArcSwap::from_pointee(Levels::new(Config::bootstrap(), total_seats, None)),
            wait_limit,
            metrics: FlowMetrics::default(),
        }
    }

    /// Follows `registry`'s FlowSchemas and PriorityLevelConfigurations: once both are listed,
    /// and at each change, the levels and schemas are theirs, and each FlowSchema's `Dangling`
    /// condition says whether its level exists (until `self` is dropped).
    pub fn follow(self: &Arc<Self>, registry: &Arc<Registry>) {
        let (Some(schemas), Some(levels)) = (
            registry.resolve(GROUP, "v1", "flowschemas"),
            registry.resolve(GROUP, "v1", "prioritylevelconfigurations"),
        ) else {
            return;
        };
        let (schema_copy, level_copy) = (Writer::new(), Writer::new());
        let (schemas_read, levels_read) = (schema_copy.reader(), level_copy.reader());
        let mut changes = Box::pin(futures::stream::select(
            schemas.follow("v1").reflect_changes(schema_copy),
            levels.follow("v1").reflect_changes(level_copy),
        ));
        let control = Arc::downgrade(self);
        let client = Client::new(registry, STATUS_MANAGER);
        tokio::spawn(async move {
            while changes.next().await.is_some() {
                if !schemas_read.is_ready() || !levels_read.is_ready() {
                    continue;
                }
                let Some(control) = control.upgrade() else {
                    return;
                };
                let (schemas, levels) = (schemas_read.values(), levels_read.values());
                report_dangling(&client, &schemas, &levels);
                let config = Config::from_objects(&schemas, &levels);
                let before = control.levels.load();
                control.levels.store(Arc::new(Levels::new(
                    config,
                    control.total_seats,
                    Some(&before),
                )));
            }
        });
    }

    /// Where a request is served, by the schemas in force.
    pub fn classify(&self, attributes: &Attributes) -> Classification {
        self.levels.load().config.classify(attributes)
    }

    /// Waits for `seats` seats for a request classified as `c`.
    ///
    /// # Errors
    /// 429 TooManyRequests (with `Retry-After`) when the flow's queue is full, the wait ran
    /// out, or (exempt) every in-flight slot is taken.
    pub async fn admit(&self, c: &Classification, seats: u32) -> Result<Admitted, Status> {
        let began = Instant::now();
        let levels = self.levels.load();
        // The configuration it was classified by, or (changed since) its level by name.
        let set = match levels.config.levels.get(c.level) {
            Some(level) if level.name == c.level_name => levels.sets[c.level].clone(),
            _ => levels.set(&c.level_name),
        };
        let admitted = match &set {
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
    flow_schema: String,
    priority_level: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WaitLabels {
    flow_schema: String,
    priority_level: String,
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
        let (schema, level) = (c.schema.to_string(), c.level_name.to_string());
        if let Err(reason) = admitted {
            self.rejected
                .get_or_create(&RejectedLabels {
                    flow_schema: schema.clone(),
                    priority_level: level.clone(),
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
    let levels = control.levels.load();
    for (name, help, pick) in families {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (level, queues) in levels.config.levels.iter().zip(&levels.sets) {
            if let Some(queues) = queues {
                let labels = vec![("priority_level", &*level.name)];
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
