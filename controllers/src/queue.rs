//! The controllers' work queue: each key queued at most once, handed to one worker at a time,
//! and put back after a failure with a per-key exponential delay (client-go's rate-limited
//! workqueue is the model).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

/// The first retry delay of a failing key; it doubles up to [`MAX_RETRY_DELAY`].
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(50);
/// The longest retry delay.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(10);

struct State<K> {
    /// Keys waiting, in order.
    queue: VecDeque<K>,
    /// The keys in `queue` (a key is queued once).
    queued: HashSet<K>,
    /// Keys a worker holds now; a key added meanwhile is queued again when it is done.
    active: HashSet<K>,
    /// Keys added while active.
    dirty: HashSet<K>,
    /// Failures in a row, per key.
    failures: HashMap<K, u32>,
}

/// A deduplicating work queue shared by a controller's event loop and its workers.
pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    ready: Notify,
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    /// An empty queue.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                queued: HashSet::new(),
                active: HashSet::new(),
                dirty: HashSet::new(),
                failures: HashMap::new(),
            }),
            ready: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `key` unless it is queued already (a key being worked on is queued again when
    /// its worker is done).
    pub fn add(&self, key: K) {
        let mut state = self.lock();
        if state.active.contains(&key) {
            state.dirty.insert(key);
            return;
        }
        if state.queued.insert(key.clone()) {
            state.queue.push_back(key);
            drop(state);
            self.ready.notify_one();
        }
    }

    /// Waits for the next key; the caller must call [`WorkQueue::done`] or
    /// [`WorkQueue::retry`] with it.
    pub async fn next(&self) -> K {
        loop {
            let notified = self.ready.notified();
            {
                let mut state = self.lock();
                if let Some(key) = state.queue.pop_front() {
                    state.queued.remove(&key);
                    state.active.insert(key.clone());
                    if !state.queue.is_empty() {
                        self.ready.notify_one();
                    }
                    return key;
                }
            }
            notified.await;
        }
    }

    /// Works on keys as they come, forever, for the controller `controller`: `handle` answers
    /// `Ok(true)` when a key is done with, `Ok(false)` to look at it again later; an error is
    /// logged and the key retried. Both later looks wait out the key's backoff.
    pub async fn work<F, Fut, E>(self: Arc<Self>, controller: &'static str, handle: F)
    where
        K: std::fmt::Debug,
        F: Fn(K) -> Fut,
        Fut: std::future::Future<Output = Result<bool, E>>,
        E: std::fmt::Display,
    {
        loop {
            let key = self.next().await;
            match handle(key.clone()).await {
                Ok(true) => self.done(&key),
                Ok(false) => self.retry(key),
                Err(e) => {
                    tracing::debug!(controller, ?key, error = %e, "work retried");
                    self.retry(key);
                }
            }
        }
    }

    /// The work on `key` succeeded: its failure count resets.
    pub fn done(&self, key: &K) {
        let again = {
            let mut state = self.lock();
            state.failures.remove(key);
            state.active.remove(key);
            state.dirty.remove(key)
        };
        if again {
            self.add(key.clone());
        }
    }

    /// The work on `key` failed (or must be looked at again later): it is queued again after
    /// a delay that doubles with each failure in a row.
    pub fn retry(self: &Arc<Self>, key: K) {
        let delay = {
            let mut state = self.lock();
            state.active.remove(&key);
            state.dirty.remove(&key);
            let failures = state.failures.entry(key.clone()).or_insert(0);
            *failures += 1;
            FIRST_RETRY_DELAY
                .saturating_mul(1 << (*failures - 1).min(16))
                .min(MAX_RETRY_DELAY)
        };
        let queue = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(queue) = queue.upgrade() {
                queue.add(key);
            }
        });
    }

    /// How many keys wait (for metrics).
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether no key waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_key_is_queued_once_and_again_after_work_that_saw_it_change() {
        let q = WorkQueue::new();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        let first = q.next().await;
        assert_eq!(first, "a");
        q.add("a"); // changed while a worker holds it
        assert_eq!(q.len(), 1);
        q.done(&first);
        assert_eq!(q.next().await, "b");
        assert_eq!(q.next().await, "a");
    }

    #[tokio::test]
    async fn a_failed_key_comes_back_later() {
        let q = WorkQueue::new();
        q.add(1);
        let k = q.next().await;
        q.retry(k);
        assert!(q.is_empty());
        let again = tokio::time::timeout(Duration::from_secs(5), q.next()).await;
        assert_eq!(again.unwrap(), 1);
    }
}
