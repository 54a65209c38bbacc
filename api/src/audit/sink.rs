//! The audit log backend: events as JSON lines appended to a file (or stdout), written by a
//! thread of its own from a bounded queue, so a request never waits on the disk; when the
//! queue is full the event is dropped and counted.

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use prometheus_client::metrics::counter::Counter;

use super::event::Event;
use super::rotate::{LogRotation, RotatingFile};
use super::{Error, Result};

/// Events the queue holds before new ones are dropped (kube-apiserver's buffered backend
/// default).
pub(super) const DEFAULT_CAPACITY: usize = 10_000;
/// Events written between flushes while the queue stays busy.
const BATCH: usize = 1_000;
/// The least time between two warnings about dropped or unwritten events.
const WARN_EVERY_SECS: u64 = 10;

/// What the audit log counts, for `/metrics` (kube-apiserver's names).
#[derive(Debug, Clone, Default)]
pub struct AuditMetrics {
    /// `apiserver_audit_event_total`: events generated and sent to the backend.
    pub events: Counter,
    /// `apiserver_audit_error_total` (`plugin="log"`): events lost, dropped on a full queue or
    /// failing to be written.
    pub errors: Counter,
}

/// The log backend: hands events to the writer thread; dropping it drains the queue, flushes
/// and joins the thread.
pub struct Sink {
    tx: Option<SyncSender<Box<Event>>>,
    thread: Option<JoinHandle<()>>,
    metrics: AuditMetrics,
    warned: Warned,
}

impl Sink {
    /// A sink appending to `path` (created with mode 0600, its directory too; rotated per
    /// `rotation`), or writing to stdout for `-`.
    ///
    /// # Errors
    /// [`Error::OpenLog`] when the file cannot be opened for appending.
    pub fn open(path: &Path, capacity: usize, rotation: LogRotation) -> Result<Self> {
        if path.as_os_str() == "-" {
            return Ok(Self::with_writer(Box::new(io::stdout()), capacity));
        }
        let file = RotatingFile::open(path, rotation).map_err(|source| Error::OpenLog {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self::with_writer(Box::new(file), capacity))
    }

    /// A sink writing lines to `out`, queueing at most `capacity` events.
    pub fn with_writer(out: Box<dyn Write + Send>, capacity: usize) -> Self {
        let (tx, rx) = mpsc::sync_channel(capacity);
        let metrics = AuditMetrics::default();
        let errors = metrics.errors.clone();
        let thread = std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || write_loop(&rx, BufWriter::new(out), &errors))
            .ok();
        if thread.is_none() {
            tracing::error!("could not start the audit log writer; audit events will be dropped");
        }
        Self {
            tx: thread.as_ref().map(|_| tx),
            thread,
            metrics,
            warned: Warned::default(),
        }
    }

    /// Queues `event` for writing without waiting: on a full queue the event is dropped,
    /// counted, and (at most every few seconds) a warning logged.
    pub fn process(&self, event: Box<Event>) {
        self.metrics.events.inc();
        let sent = match &self.tx {
            Some(tx) => tx.try_send(event),
            None => Err(TrySendError::Disconnected(event)),
        };
        if let Err(e) = sent {
            self.metrics.errors.inc();
            if self.warned.due() {
                let why = match e {
                    TrySendError::Full(_) => "the audit log queue is full",
                    TrySendError::Disconnected(_) => "the audit log writer has stopped",
                };
                tracing::warn!(
                    lost_total = self.metrics.errors.get(),
                    "dropping audit events: {why}"
                );
            }
        }
    }

    /// The sink's counters.
    pub fn metrics(&self) -> &AuditMetrics {
        &self.metrics
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // Closing the queue lets the writer drain it, flush and return.
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The writer thread: writes what is queued, flushing whenever the queue empties (or every
/// [`BATCH`] events while it stays busy), until the sink is dropped.
fn write_loop(
    rx: &Receiver<Box<Event>>,
    mut out: BufWriter<Box<dyn Write + Send>>,
    errors: &Counter,
) {
    let warned = Warned::default();
    let fail = |e: io::Error, lost: u64| {
        errors.inc_by(lost);
        if warned.due() {
            tracing::warn!(error = %e, "could not write the audit log");
        }
    };
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        let mut written = 0;
        while let Some(event) = next.take() {
            if let Err(e) = write_line(&mut out, &event) {
                fail(e, 1);
            }
            written += 1;
            if written < BATCH {
                next = rx.try_recv().ok();
            }
        }
        if let Err(e) = out.flush() {
            fail(e, 0);
        }
    }
}

/// One event as one line of JSON.
fn write_line(out: &mut impl Write, event: &Event) -> io::Result<()> {
    serde_json::to_writer(&mut *out, event)?;
    out.write_all(b"\n")
}

/// When a rate-limited warning was last logged (seconds since the epoch).
#[derive(Default)]
struct Warned(AtomicU64);

impl Warned {
    /// True (and remembered) when the last warning is older than [`WARN_EVERY_SECS`].
    fn due(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            .max(WARN_EVERY_SECS);
        let last = self.0.load(Ordering::Relaxed);
        now >= last + WARN_EVERY_SECS
            && self
                .0
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}
