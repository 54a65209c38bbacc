//! Per-call limits: the linear-memory cap (a `ResourceLimiter` that fails loudly) and the deadline
//! arithmetic on top of the engine's 1 ms epoch.

use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;

/// How often the epoch advances: the resolution of call deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Enforces the memory cap on one store; a growth past it traps with a clear message.
#[derive(Debug)]
pub(crate) struct CallLimits {
    pub(crate) memory_limit: usize,
    pub(crate) hit_memory_limit: bool,
}

impl CallLimits {
    pub(crate) fn new(memory_limit: usize) -> Self {
        Self {
            memory_limit,
            hit_memory_limit: false,
        }
    }
}

impl ResourceLimiter for CallLimits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_limit {
            self.hit_memory_limit = true;
            wasmtime::bail!(
                "linear memory would grow to {desired} bytes, over the cap of {} bytes",
                self.memory_limit
            );
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }

    fn instances(&self) -> usize {
        1
    }

    fn memories(&self) -> usize {
        1
    }

    fn tables(&self) -> usize {
        4
    }
}

/// The wall-clock deadline of one call, turned into epoch ticks (the ticker advances the epoch
/// every [`EPOCH_TICK`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    pub(crate) at: Instant,
    pub(crate) budget: Duration,
}

impl Deadline {
    pub(crate) fn after(budget: Duration) -> Self {
        Self {
            at: Instant::now() + budget,
            budget,
        }
    }

    /// Whether the deadline has come.
    pub(crate) fn passed(&self) -> bool {
        Instant::now() >= self.at
    }

    /// Ticks from now until the deadline, rounded up, plus one because the current tick may be
    /// almost over.
    pub(crate) fn ticks(&self) -> u64 {
        let left = self.at.saturating_duration_since(Instant::now());
        let tick = EPOCH_TICK.as_nanos();
        (left.as_nanos().div_ceil(tick) as u64) + 1
    }

    /// Pushes the deadline back by time spent in a host function, which the guest is not
    /// charged for.
    pub(crate) fn extend(&mut self, by: Duration) {
        self.at += by;
    }
}
