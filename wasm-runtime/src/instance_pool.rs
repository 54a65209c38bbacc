//! Kept instances of a reactor module (one that exports `_initialize`, as Go's runtime and the
//! Rust SDK's modules do): instantiating one costs more than a call (far more for Go), so an
//! instance serves session after session and is recycled after a number of sessions, or once its
//! linear memory passed a high-water mark (a garbage-collected heap only grows), or at once after
//! a failed call. Idle instances hold slots of the pooling allocator, so all modules together
//! keep at most `max_idle_total` idle: the rest stay free for calls in flight.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::engine::Runtime;
use super::instance::Session;
use super::metrics::ModuleCounters;

/// When a kept instance is replaced by a fresh one, and how many wait idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceReuse {
    /// Sessions an instance serves before it is dropped.
    pub max_sessions: u32,
    /// Linear memory, in bytes, past which an instance is dropped after its session.
    pub memory_high_water: usize,
    /// Idle instances kept per module (each holds a slot of the instance pool).
    pub max_idle: usize,
    /// Idle instances kept by all modules together.
    pub max_idle_total: usize,
}

impl Default for InstanceReuse {
    fn default() -> Self {
        Self {
            max_sessions: 10_000,
            memory_high_water: 48 << 20,
            max_idle: 4,
            max_idle_total: 64,
        }
    }
}

/// The idle instances of one reactor module.
pub(crate) struct InstancePool {
    idle: Mutex<Vec<Session>>,
    /// Idle instances of all modules (the runtime's count).
    idle_total: Arc<AtomicUsize>,
}

impl InstancePool {
    /// An empty pool counting its idle instances in the runtime's total.
    pub(crate) fn new(runtime: &Runtime) -> Self {
        Self {
            idle: Mutex::default(),
            idle_total: runtime.inner.idle_instances.clone(),
        }
    }

    /// An idle instance, if one waits.
    pub(crate) fn take(&self) -> Option<Session> {
        let session = self.idle.lock().expect("instance pool lock").pop();
        if session.is_some() {
            self.idle_total.fetch_sub(1, Ordering::Relaxed);
        }
        session
    }

    /// The linear memory of each idle instance, in bytes.
    pub(crate) fn idle_memory(&self) -> Vec<usize> {
        let idle = self.idle.lock().expect("instance pool lock");
        idle.iter().map(Session::memory_size).collect()
    }

    /// Keeps `session`'s instance for a later session, unless it failed a call, served its
    /// number of sessions, grew past the high-water mark, or enough instances wait already (of
    /// this module, or of all).
    pub(crate) fn give_back(
        &self,
        runtime: &Runtime,
        counters: &ModuleCounters,
        mut session: Session,
    ) {
        let reuse = runtime.inner.config.instance_reuse;
        let spent = session.failed
            || session.sessions >= reuse.max_sessions
            || session.memory_size() > reuse.memory_high_water;
        if spent {
            counters.record_instance_recycled();
            return;
        }
        let mut idle = self.idle.lock().expect("instance pool lock");
        if idle.len() >= reuse.max_idle {
            return;
        }
        let total = self.idle_total.fetch_add(1, Ordering::Relaxed);
        if total >= reuse.max_idle_total {
            self.idle_total.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        session.rest();
        idle.push(session);
    }
}

impl Drop for InstancePool {
    fn drop(&mut self) {
        let idle = self.idle.get_mut().map_or(0, |idle| idle.len());
        self.idle_total.fetch_sub(idle, Ordering::Relaxed);
    }
}
