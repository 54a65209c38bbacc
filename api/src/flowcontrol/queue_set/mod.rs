//! Fair queuing of requests within one priority level: each flow (a user) has its own queue,
//! and a seat that frees goes to the flow that has had the least service, as Kubernetes' API
//! Priority and Fairness queue set does.
//!
//! The bookkeeping is fair queuing by virtual time. `R` is the service (in seat-seconds) each
//! active flow would have had if the seats in use were shared equally between the active flows
//! (those with a request queued or executing); it advances at `seats in use / active flows`. A
//! flow's `next_dispatch` is the virtual time its next request may start: a flow that becomes
//! active starts at `R`, each dispatch adds the request's seats times an estimated duration, and
//! a completion replaces the estimate with the real duration. Dispatch picks the queued flow with
//! the smallest `next_dispatch`; when its head needs more seats than are free, nothing else goes
//! first (so wide requests are not starved by narrow ones). Unlike Kubernetes, every flow has a
//! queue of its own (no shuffle sharding): flows live only while they have work or service
//! debt, so their number is bounded by the requests waiting.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// The duration a request is assumed to take until it completes (seat-seconds per seat).
const ESTIMATED_SERVICE: f64 = 0.1;

/// Why a request was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rejection {
    /// Its flow's queue was full.
    QueueFull,
    /// It waited in its queue for the longest a request may wait.
    TimedOut,
    /// Its level rejects what cannot start at once, and it could not.
    ConcurrencyLimit,
}

impl Rejection {
    /// The `reason` label of `apiserver_flowcontrol_rejected_requests_total`.
    pub(super) fn reason(self) -> &'static str {
        match self {
            Rejection::QueueFull => "queue-full",
            Rejection::TimedOut => "time-out",
            Rejection::ConcurrencyLimit => "concurrency-limit",
        }
    }
}

/// The queues and seats of one priority level.
pub(super) struct QueueSet {
    /// Seats the level may use at once.
    limit: u32,
    /// Requests a flow may have waiting; `None`: none wait (a level that rejects).
    queue_length_limit: Option<usize>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    seats_in_use: u32,
    /// Virtual time (seat-seconds per active flow) and when it was last advanced.
    virtual_time: f64,
    advanced: Option<Instant>,
    flows: HashMap<Arc<str>, Flow>,
    next_id: u64,
}

struct Flow {
    queue: VecDeque<Waiter>,
    executing_seats: u32,
    next_dispatch: f64,
}

struct Waiter {
    id: u64,
    seats: u32,
    /// Told when the request was given its seats.
    granted: oneshot::Sender<Instant>,
}

impl QueueSet {
    /// A level of `limit` seats where each flow may have `queue_length_limit` requests waiting
    /// (`None`: a request that cannot start at once is rejected).
    pub(super) fn new(limit: u32, queue_length_limit: Option<usize>) -> Arc<Self> {
        Arc::new(Self {
            limit: limit.max(1),
            queue_length_limit,
            state: Mutex::default(),
        })
    }

    /// The seats the level may use at once.
    pub(super) fn limit(&self) -> u32 {
        self.limit
    }

    /// Requests a flow may have waiting (`None`: none).
    pub(super) fn queue_length_limit(&self) -> Option<usize> {
        self.queue_length_limit
    }

    /// Requests waiting and seats in use.
    pub(super) fn load(&self) -> (usize, u32) {
        let state = self.lock();
        let waiting = state.flows.values().map(|f| f.queue.len()).sum();
        (waiting, state.seats_in_use)
    }

    /// Waits (at most `wait_limit`) for `seats` seats for a request of `flow`; the seats are
    /// held until the returned value drops. A request wider than the level takes all of it.
    ///
    /// # Errors
    /// The flow's queue is full, or the wait ran out.
    pub(super) async fn admit(
        self: &Arc<Self>,
        flow: &str,
        seats: u32,
        wait_limit: Duration,
    ) -> Result<Seats, Rejection> {
        let seats = seats.clamp(1, self.limit);
        let flow: Arc<str> = Arc::from(flow);
        let (granted, receiver) = oneshot::channel();
        let id = {
            let mut state = self.lock();
            state.advance();
            let State {
                flows,
                next_id,
                virtual_time,
                ..
            } = &mut *state;
            let now = *virtual_time;
            let entry = flows.entry(flow.clone()).or_insert_with(|| Flow {
                queue: VecDeque::new(),
                executing_seats: 0,
                next_dispatch: now,
            });
            if entry.queue.len() >= self.queue_length_limit.unwrap_or(usize::MAX) {
                return Err(Rejection::QueueFull);
            }
            if entry.queue.is_empty() && entry.executing_seats == 0 {
                entry.next_dispatch = entry.next_dispatch.max(now);
            }
            *next_id += 1;
            let id = *next_id;
            entry.queue.push_back(Waiter { id, seats, granted });
            self.dispatch(&mut state);
            if self.queue_length_limit.is_none() {
                // A rejecting level: what did not start at once does not wait.
                let entry = state.flows.get_mut(&flow).expect("queued above");
                if let Some(at) = entry.queue.iter().position(|w| w.id == id) {
                    entry.queue.remove(at);
                    let idle = entry.queue.is_empty()
                        && entry.executing_seats == 0
                        && entry.next_dispatch <= state.virtual_time;
                    if idle {
                        state.flows.remove(&flow);
                    }
                    return Err(Rejection::ConcurrencyLimit);
                }
            }
            id
        };
        let mut waiting = Waiting {
            set: self.clone(),
            flow,
            id,
            seats,
            receiver: Some(receiver),
        };
        let receiver = waiting.receiver.as_mut().expect("set above");
        if let Ok(Ok(at)) = tokio::time::timeout(wait_limit, receiver).await {
            return Ok(waiting.into_seats(at));
        }
        // Still queued (checked under the lock, so no grant can race it), or granted meanwhile.
        if waiting.withdraw() {
            return Err(Rejection::TimedOut);
        }
        let at = waiting.granted_at();
        Ok(waiting.into_seats(at))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts queued requests while their seats are free, least-served flow first. Their
    /// service is counted from the instant virtual time was last advanced, as `R` is.
    fn dispatch(&self, state: &mut State) {
        let now = *state.advanced.get_or_insert_with(Instant::now);
        loop {
            let Some((flow, seats)) = state
                .flows
                .iter()
                .filter_map(|(name, f)| {
                    f.queue
                        .front()
                        .map(|w| (name, f.next_dispatch, w.id, w.seats))
                })
                // Ties go to the request that came first.
                .min_by(|a, b| a.1.total_cmp(&b.1).then(a.2.cmp(&b.2)))
                .map(|(name, _, _, seats)| (name.clone(), seats))
            else {
                return;
            };
            if state.seats_in_use + seats > self.limit {
                return;
            }
            let entry = state.flows.get_mut(&flow).expect("chosen above");
            let waiter = entry.queue.pop_front().expect("chosen above");
            entry.executing_seats += waiter.seats;
            entry.next_dispatch += f64::from(waiter.seats) * ESTIMATED_SERVICE;
            state.seats_in_use += waiter.seats;
            // The receiver lives until its `Waiting` withdraws it under this lock, so a send
            // fails only if that already happened; undo the grant then.
            if waiter.granted.send(now).is_err() {
                state.finish(&flow, waiter.seats, Duration::ZERO);
            }
        }
    }

    fn release(&self, flow: &str, seats: u32, took: Duration) {
        let mut state = self.lock();
        state.advance();
        state.finish(flow, seats, took);
        self.dispatch(&mut state);
    }
}

impl State {
    /// Moves virtual time on to now.
    fn advance(&mut self) {
        let now = Instant::now();
        let elapsed = self
            .advanced
            .replace(now)
            .map_or(0.0, |then| now.duration_since(then).as_secs_f64());
        let active = self
            .flows
            .values()
            .filter(|f| !f.queue.is_empty() || f.executing_seats > 0)
            .count();
        if active > 0 {
            self.virtual_time += elapsed * f64::from(self.seats_in_use) / active as f64;
        }
    }

    /// Returns a request's seats and corrects its flow's service from estimated to actual.
    fn finish(&mut self, flow: &str, seats: u32, took: Duration) {
        // Saturating: a miscount must never take the server down, only skew fairness.
        self.seats_in_use = self.seats_in_use.saturating_sub(seats);
        let now = self.virtual_time;
        let forget = match self.flows.get_mut(flow) {
            Some(f) => {
                f.executing_seats = f.executing_seats.saturating_sub(seats);
                f.next_dispatch -= f64::from(seats) * (ESTIMATED_SERVICE - took.as_secs_f64());
                f.queue.is_empty() && f.executing_seats == 0 && f.next_dispatch <= now
            }
            None => false,
        };
        if forget {
            self.flows.remove(flow);
        }
        // Idle flows ahead of virtual time are kept for their debt; drop those it caught up.
        if self.flows.len() > 64 {
            self.flows.retain(|_, f| {
                !f.queue.is_empty() || f.executing_seats > 0 || f.next_dispatch > now
            });
        }
    }
}

/// A request in its queue; dropping it (the client went away) withdraws it or returns its seats.
struct Waiting {
    set: Arc<QueueSet>,
    flow: Arc<str>,
    id: u64,
    seats: u32,
    receiver: Option<oneshot::Receiver<Instant>>,
}

impl Waiting {
    /// Takes the request out of its queue; false when it was granted seats meanwhile.
    fn withdraw(&mut self) -> bool {
        let mut state = self.set.lock();
        state.advance();
        let Some(flow) = state.flows.get_mut(&self.flow) else {
            return false;
        };
        let Some(at) = flow.queue.iter().position(|w| w.id == self.id) else {
            return false;
        };
        flow.queue.remove(at);
        self.receiver = None;
        // The head may have been what held the others back.
        self.set.dispatch(&mut state);
        true
    }

    /// When a request no longer queued was given its seats.
    fn granted_at(&mut self) -> Instant {
        let at = self.receiver.as_mut().and_then(|r| r.try_recv().ok());
        at.unwrap_or_else(Instant::now)
    }

    fn into_seats(mut self, started: Instant) -> Seats {
        self.receiver = None;
        Seats {
            set: self.set.clone(),
            flow: self.flow.clone(),
            seats: self.seats,
            started,
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.receiver.is_some() && !self.withdraw() {
            let took = self.granted_at().elapsed();
            self.set.release(&self.flow, self.seats, took);
        }
    }
}

/// Seats held by an executing request, returned when dropped.
pub struct Seats {
    set: Arc<QueueSet>,
    flow: Arc<str>,
    seats: u32,
    started: Instant,
}

impl Drop for Seats {
    fn drop(&mut self) {
        self.set
            .release(&self.flow, self.seats, self.started.elapsed());
    }
}

#[cfg(test)]
mod tests;
