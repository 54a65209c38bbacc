//! The conversions a watch fan-out shares: an event's object converted to a version once, however
//! many watchers ask for that version — the first converts (and serializes) it, the others await
//! that one conversion and share its bytes — so a hundred watchers at a non-storage version cost
//! one webhook or module call per event, not a hundred. Objects a watcher meets together (a
//! burst) are converted in one call, and that call is shared the same way, object by object.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::{BoxFuture, FutureExt as _, Shared};

use strategy_host_storage::SharedObject;

/// Conversions remembered before the memo starts again (events are shared within moments of
/// each other: a small memo serves a fan-out).
const MAX_ENTRIES: usize = 4096;

/// One conversion: the object (namespace, name, revision), the version asked for, and who
/// converts (a module's digest: a hot swap must not serve its predecessor's answers).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct MemoKey {
    pub(super) namespace: Box<str>,
    pub(super) name: Box<str>,
    pub(super) revision: u64,
    pub(super) version: Box<str>,
    pub(super) converter: Box<str>,
}

/// A conversion of several objects, or why it failed.
pub(super) type Batch = BoxFuture<'static, Result<Vec<Arc<SharedObject>>, String>>;

/// One object's conversion, done or under way, awaited by whoever asks.
type Converted = Shared<BoxFuture<'static, Result<Arc<SharedObject>, String>>>;

/// The shared conversions of one resource's store.
#[derive(Default)]
pub(super) struct ConversionMemo {
    entries: Mutex<HashMap<MemoKey, Converted>>,
}

impl std::fmt::Debug for ConversionMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversionMemo").finish_non_exhaustive()
    }
}

impl ConversionMemo {
    /// The conversions of `keys`, in order: those remembered or under way are awaited, the
    /// others made by one `convert` of their indices (shared with anyone asking meanwhile). A
    /// failed conversion is forgotten, so the next watcher tries again.
    pub(super) async fn get_or_convert<F>(
        &self,
        keys: &[MemoKey],
        convert: F,
    ) -> Result<Vec<Arc<SharedObject>>, String>
    where
        F: FnOnce(Vec<usize>) -> Batch,
    {
        let awaited: Vec<Converted> = {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if entries.len() + keys.len() > MAX_ENTRIES {
                entries.clear();
            }
            let misses: Vec<usize> = (0..keys.len())
                .filter(|&i| !entries.contains_key(&keys[i]))
                .collect();
            if !misses.is_empty() {
                let batch = convert(misses.clone()).shared();
                for (j, &i) in misses.iter().enumerate() {
                    let one = batch
                        .clone()
                        .map(move |converted| converted.map(|objects| objects[j].clone()))
                        .boxed()
                        .shared();
                    entries.insert(keys[i].clone(), one);
                }
            }
            keys.iter().map(|k| entries[k].clone()).collect()
        };
        let results = futures::future::join_all(awaited).await;
        if results.iter().any(Result::is_err) {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            for (key, result) in keys.iter().zip(&results) {
                if result.is_err() {
                    entries.remove(key);
                }
            }
        }
        results.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn key(revision: u64) -> MemoKey {
        MemoKey {
            namespace: "default".into(),
            name: format!("o{revision}").into(),
            revision,
            version: "v2".into(),
            converter: "module".into(),
        }
    }

    /// A converter counting its calls and the objects it converts.
    fn converter(
        calls: Arc<AtomicUsize>,
        objects: Arc<AtomicUsize>,
    ) -> impl FnOnce(Vec<usize>) -> Batch {
        move |misses: Vec<usize>| {
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                objects.fetch_add(misses.len(), Ordering::SeqCst);
                tokio::task::yield_now().await;
                Ok(misses
                    .iter()
                    .map(|i| Arc::new(SharedObject::new(json!({"apiVersion": "g/v2", "n": i}))))
                    .collect())
            }
            .boxed()
        }
    }

    #[tokio::test]
    async fn concurrent_watchers_share_one_conversion_per_object() {
        let memo = Arc::new(ConversionMemo::default());
        let (calls, objects) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let burst: Vec<MemoKey> = (1..=3).map(key).collect();
        let watchers: Vec<_> = (0..50)
            .map(|_| {
                let (memo, burst) = (memo.clone(), burst.clone());
                let convert = converter(calls.clone(), objects.clone());
                tokio::spawn(async move { memo.get_or_convert(&burst, convert).await })
            })
            .collect();
        for w in watchers {
            let got = w.await.unwrap().unwrap();
            assert_eq!(got.len(), 3);
            assert!(got.iter().all(|o| o.api_version() == Some("g/v2")));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1, "one call for the burst");
        assert_eq!(objects.load(Ordering::SeqCst), 3);
        // A burst overlapping it converts only what is new.
        let next: Vec<MemoKey> = (3..=4).map(key).collect();
        memo.get_or_convert(&next, converter(calls.clone(), objects.clone()))
            .await
            .unwrap();
        assert_eq!(objects.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn a_failed_conversion_is_tried_again() {
        let memo = ConversionMemo::default();
        let failing = |_: Vec<usize>| async { Err("webhook down".to_string()) }.boxed();
        assert!(memo.get_or_convert(&[key(1)], failing).await.is_err());
        let (calls, objects) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        memo.get_or_convert(&[key(1)], converter(calls.clone(), objects))
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
