//! The epoch ticker: a thread advancing the engine's epoch every [`EPOCH_TICK`] while any
//! instance runs (the epoch is how a running guest is interrupted at its deadline), asleep once
//! none has for [`IDLE_TICKS`] ticks, so an idle server does not wake a thousand times a second.

#[cfg(test)]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};

use wasmtime::Engine;

use super::limits::EPOCH_TICK;

/// Ticks without a running instance after which the ticker sleeps (100 ms: a steady trickle
/// of calls keeps it ticking rather than paying a wake-up per call).
const IDLE_TICKS: u32 = 100;

/// The ticker's shared state.
#[derive(Debug, Default)]
pub(crate) struct EpochTicker {
    /// Sessions holding the ticker awake.
    running: AtomicUsize,
    /// Whether the ticker sleeps (or is about to): a session starting then wakes it.
    asleep: AtomicBool,
    stop: AtomicBool,
    thread: OnceLock<Thread>,
    /// Epochs advanced so far (what the tests watch).
    #[cfg(test)]
    ticks: AtomicU64,
}

/// Held by a running session: the ticker keeps ticking while any is held.
#[derive(Debug)]
pub(crate) struct Ticking(Arc<EpochTicker>);

impl Drop for Ticking {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, SeqCst);
    }
}

impl EpochTicker {
    /// Starts the ticker thread for `engines` (each compiler tier's).
    pub(crate) fn start(engines: Vec<Engine>) -> std::io::Result<Arc<Self>> {
        let ticker = Arc::new(Self::default());
        let state = ticker.clone();
        let thread = thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || state.run(&engines))?;
        let _ = ticker.thread.set(thread.thread().clone());
        Ok(ticker)
    }

    /// Keeps the ticker ticking until the returned guard drops, waking it if it sleeps.
    pub(crate) fn hold(self: &Arc<Self>) -> Ticking {
        self.running.fetch_add(1, SeqCst);
        // Either the ticker sees `running` above zero before it sleeps, or it has said it
        // sleeps and is woken here (an unpark before its park makes the park return at once).
        if self.asleep.load(SeqCst) {
            self.wake();
        }
        Ticking(self.clone())
    }

    /// Epochs advanced so far.
    #[cfg(test)]
    fn ticks(&self) -> u64 {
        self.ticks.load(SeqCst)
    }

    /// Ends the ticker thread.
    pub(crate) fn stop(&self) {
        self.stop.store(true, SeqCst);
        self.wake();
    }

    fn wake(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }

    fn run(&self, engines: &[Engine]) {
        let mut idle = 0;
        while !self.stop.load(SeqCst) {
            thread::sleep(EPOCH_TICK);
            engines.iter().for_each(Engine::increment_epoch);
            #[cfg(test)]
            self.ticks.fetch_add(1, SeqCst);
            if self.running.load(SeqCst) > 0 {
                idle = 0;
                continue;
            }
            idle += 1;
            if idle < IDLE_TICKS {
                continue;
            }
            self.asleep.store(true, SeqCst);
            if self.running.load(SeqCst) == 0 && !self.stop.load(SeqCst) {
                thread::park();
            }
            self.asleep.store(false, SeqCst);
            idle = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Waits up to 5 s for `done`.
    fn eventually(done: impl Fn() -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if done() {
                return true;
            }
            thread::sleep(Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn ticks_while_held_and_sleeps_when_idle() {
        let ticker = EpochTicker::start(vec![Engine::default()]).unwrap();
        // Idle from the start: it falls asleep after its idle ticks and stops advancing.
        assert!(eventually(|| ticker.asleep.load(SeqCst)));
        let asleep_at = ticker.ticks();
        thread::sleep(Duration::from_millis(50));
        assert_eq!(ticker.ticks(), asleep_at, "an idle ticker advanced");
        // A session wakes it, and it keeps ticking for as long as one is held.
        let held = ticker.hold();
        assert!(eventually(|| ticker.ticks() > asleep_at + 200));
        assert!(!ticker.asleep.load(SeqCst));
        drop(held);
        assert!(eventually(|| ticker.asleep.load(SeqCst)));
        ticker.stop();
    }

    #[test]
    fn a_sleeping_ticker_wakes_for_every_hold() {
        let ticker = EpochTicker::start(vec![Engine::default()]).unwrap();
        for _ in 0..20 {
            assert!(eventually(|| ticker.asleep.load(SeqCst)));
            let held = ticker.hold();
            let from = ticker.ticks();
            assert!(
                eventually(|| ticker.ticks() >= from + 3),
                "a held ticker slept"
            );
            drop(held);
        }
        ticker.stop();
    }
}
