//! A background task that runs a step every interval on a store it does not keep alive: it ends
//! when the store is dropped or told to stop. Both stores' compactors run on it.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::oneshot;

/// Every `interval` (the first time at once), runs `step` on the store behind `store` with the
/// state the previous step returned (`state` the first time), until `stop` fires or the store
/// is gone. A step that runs late delays the next one rather than bunching them.
pub(crate) fn spawn_periodic<S, T, F, Fut>(
    store: Weak<S>,
    interval: Duration,
    mut stop: oneshot::Receiver<()>,
    mut state: T,
    mut step: F,
) where
    S: Send + Sync + 'static,
    T: Send + 'static,
    F: FnMut(Arc<S>, T) -> Fut + Send + 'static,
    Fut: Future<Output = T> + Send,
{
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = &mut stop => return,
                _ = ticker.tick() => {}
            }
            let Some(store) = store.upgrade() else { return };
            state = step(store, state).await;
        }
    });
}
