//! The conversions a watch fan-out shares: an event's object converted to a version once, however
//! many watchers ask for that version — the first converts (and serializes) it, the others await
//! that one conversion and share its bytes — so a hundred watchers at a non-storage version cost
//! one webhook or module call per event, not a hundred.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use super::error::Result;
use crate::storage::SharedObject;

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

type Cell = Arc<OnceCell<Arc<SharedObject>>>;

/// The shared conversions of one resource's store.
#[derive(Debug, Default)]
pub(super) struct ConversionMemo {
    entries: Mutex<HashMap<MemoKey, Cell>>,
}

impl ConversionMemo {
    /// The conversion of `key`: remembered, in flight (awaited), or made now by `convert`. A
    /// failed conversion is not remembered: the next watcher tries again.
    pub(super) async fn get_or_convert<F, Fut>(
        &self,
        key: MemoKey,
        convert: F,
    ) -> Result<Arc<SharedObject>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Arc<SharedObject>>>,
    {
        let cell = {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if entries.len() >= MAX_ENTRIES && !entries.contains_key(&key) {
                entries.clear();
            }
            entries.entry(key).or_default().clone()
        };
        cell.get_or_try_init(convert).await.cloned()
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
            name: "a".into(),
            revision,
            version: "v2".into(),
            converter: "module".into(),
        }
    }

    #[tokio::test]
    async fn concurrent_watchers_share_one_conversion() {
        let memo = Arc::new(ConversionMemo::default());
        let calls = Arc::new(AtomicUsize::new(0));
        let convert = |calls: Arc<AtomicUsize>| async move {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            Ok(Arc::new(SharedObject::new(json!({"apiVersion": "g/v2"}))))
        };
        let watchers: Vec<_> = (0..50)
            .map(|_| {
                let (memo, calls) = (memo.clone(), calls.clone());
                tokio::spawn(async move { memo.get_or_convert(key(7), || convert(calls)).await })
            })
            .collect();
        for w in watchers {
            assert_eq!(w.await.unwrap().unwrap().api_version(), Some("g/v2"));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        memo.get_or_convert(key(8), || convert(calls.clone()))
            .await
            .unwrap();
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "another revision converts again"
        );
    }
}
