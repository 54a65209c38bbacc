//! Idle connections: what one connection has in progress (a request counts until its response
//! body is written, so an open watch keeps its connection busy), and a future that resolves
//! once it has had nothing in progress for the idle timeout — then the server closes it (a
//! GOAWAY on HTTP/2), as Go's server does after kube-apiserver's `IdleTimeout`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Requests in progress on one connection, and since when it has had none.
#[derive(Debug)]
pub(crate) struct ConnectionActivity {
    in_progress: AtomicUsize,
    idle_since: Mutex<Instant>,
}

impl ConnectionActivity {
    /// A connection just opened (idle until its first request).
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            in_progress: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
        })
    }

    /// Counts a request in progress until the returned guard drops.
    pub(crate) fn begin(self: &Arc<Self>) -> InProgress {
        self.in_progress.fetch_add(1, Ordering::AcqRel);
        InProgress(self.clone())
    }

    /// How long the connection has had nothing in progress; `None` while something is.
    fn idle_for(&self) -> Option<Duration> {
        let since = *self.idle_since.lock().unwrap_or_else(|p| p.into_inner());
        (self.in_progress.load(Ordering::Acquire) == 0).then(|| since.elapsed())
    }

    /// Resolves once the connection has been idle for `timeout`.
    pub(crate) async fn idle(&self, timeout: Duration) {
        loop {
            let wait = match self.idle_for() {
                Some(idle) if idle >= timeout => return,
                Some(idle) => timeout - idle,
                // Busy: look again a timeout later (a request ending restarts the clock).
                None => timeout,
            };
            tokio::time::sleep(wait).await;
        }
    }
}

/// A request in progress on its connection.
pub(crate) struct InProgress(Arc<ConnectionActivity>);

impl Drop for InProgress {
    fn drop(&mut self) {
        let activity = &self.0;
        // The clock is set before the count drops, so an idle check never reads an old start.
        *activity
            .idle_since
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Instant::now();
        activity.in_progress.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connection_is_idle_only_after_its_last_request_ends() {
        let timeout = Duration::from_millis(100);
        let activity = ConnectionActivity::new();
        let request = activity.begin();
        let idle = tokio::time::timeout(3 * timeout, activity.idle(timeout)).await;
        assert!(idle.is_err(), "idle while a request was in progress");
        let ended = Instant::now();
        drop(request);
        activity.idle(timeout).await;
        assert!(ended.elapsed() >= timeout);
    }
}
