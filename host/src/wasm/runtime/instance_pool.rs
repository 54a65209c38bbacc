//! Kept instances of a reactor module (one that exports `_initialize`, as Go's runtime does):
//! initialising one costs far more than a call, so an instance serves session after session and
//! is recycled after a number of sessions, or once its linear memory passed a high-water mark
//! (a garbage-collected heap only grows), or at once after a failed call.

use std::sync::Mutex;

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
}

impl Default for InstanceReuse {
    fn default() -> Self {
        Self {
            max_sessions: 10_000,
            memory_high_water: 48 << 20,
            max_idle: 4,
        }
    }
}

/// The idle instances of one reactor module.
#[derive(Default)]
pub(crate) struct InstancePool {
    idle: Mutex<Vec<Session>>,
}

impl InstancePool {
    /// An idle instance, if one waits.
    pub(crate) fn take(&self) -> Option<Session> {
        self.idle.lock().expect("instance pool lock").pop()
    }

    /// The linear memory of each idle instance, in bytes.
    pub(crate) fn idle_memory(&self) -> Vec<usize> {
        let idle = self.idle.lock().expect("instance pool lock");
        idle.iter().map(Session::memory_size).collect()
    }

    /// Keeps `session`'s instance for a later session, unless it failed a call, served its
    /// number of sessions, grew past the high-water mark, or enough instances wait already.
    pub(crate) fn give_back(&self, runtime: &Runtime, counters: &ModuleCounters, session: Session) {
        let reuse = runtime.inner.config.instance_reuse;
        let spent = session.failed
            || session.sessions >= reuse.max_sessions
            || session.memory_size() > reuse.memory_high_water;
        if spent {
            counters.record_instance_recycled();
            return;
        }
        let mut idle = self.idle.lock().expect("instance pool lock");
        if idle.len() < reuse.max_idle {
            idle.push(session);
        }
    }
}
