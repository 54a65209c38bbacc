//! The dispatcher's timeout budget: how long, in total, dispatch may wait for watchers whose
//! buffers are full before closing them (Kubernetes' `time_budget.go`).
//!
//! The budget refills at a steady rate up to a cap, so blocked watchers can cost the dispatcher
//! at most `refill_per_second` of every second on average, and never more than `max` at once.

use std::time::{Duration, Instant};

/// A refilling allowance of waiting time.
#[derive(Debug)]
pub(crate) struct TimeBudget {
    available: Duration,
    max: Duration,
    refill_per_second: Duration,
    last_refill: Instant,
}

impl TimeBudget {
    /// A full budget that refills `refill_per_second` each second, up to `max`.
    pub(crate) fn new(refill_per_second: Duration, max: Duration, now: Instant) -> Self {
        Self {
            available: max,
            max,
            refill_per_second,
            last_refill: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last_refill);
        self.last_refill = now;
        let earned = self.refill_per_second.mul_f64(elapsed.as_secs_f64());
        self.available = (self.available + earned).min(self.max);
    }

    /// Takes everything available now; give back what was not used with [`Self::return_unused`].
    pub(crate) fn take_available(&mut self, now: Instant) -> Duration {
        self.refill(now);
        std::mem::take(&mut self.available)
    }

    /// Gives back unused time (capped at the maximum).
    pub(crate) fn return_unused(&mut self, unused: Duration) {
        self.available = (self.available + unused).min(self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refills_at_its_rate_up_to_the_cap() {
        let t0 = Instant::now();
        let mut b = TimeBudget::new(Duration::from_millis(50), Duration::from_millis(100), t0);
        assert_eq!(b.take_available(t0), Duration::from_millis(100));
        assert_eq!(b.take_available(t0), Duration::ZERO);
        let half = b.take_available(t0 + Duration::from_secs(1));
        assert!((49..=51).contains(&half.as_millis()), "{half:?}");
        b.return_unused(Duration::from_millis(30));
        let later = b.take_available(t0 + Duration::from_secs(10));
        assert_eq!(later, Duration::from_millis(100));
    }
}
