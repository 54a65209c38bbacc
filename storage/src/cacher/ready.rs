//! Readiness of the cache: not ready until the reflector's first list is in, and again while it
//! relists; callers can check it or wait for it.

use std::time::Duration;

use tokio::sync::watch;

/// Whether the cache holds a complete, current copy of its prefix.
#[derive(Debug)]
pub(crate) struct Ready {
    state: watch::Sender<bool>,
}

impl Ready {
    /// Not ready.
    pub(crate) fn new() -> Self {
        Self {
            state: watch::Sender::new(false),
        }
    }

    /// Marks the cache ready or not.
    pub(crate) fn set(&self, ready: bool) {
        self.state.send_replace(ready);
    }

    /// True when the cache is ready.
    pub(crate) fn is_ready(&self) -> bool {
        *self.state.borrow()
    }

    /// Waits until the cache is ready (forever).
    pub(crate) async fn wait(&self) {
        let mut rx = self.state.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = rx.wait_for(|ready| *ready).await;
    }

    /// Waits until the cache is ready, at most `timeout`; false when it is still not ready.
    pub(crate) async fn wait_for(&self, timeout: Duration) -> bool {
        self.is_ready() || tokio::time::timeout(timeout, self.wait()).await.is_ok()
    }
}
