//! Compacts etcd's history every interval, as kube-apiserver does (`--etcd-compaction-interval`):
//! without it etcd keeps every revision until its database reaches its space quota and it
//! turns read-only.
//!
//! Hosts sharing an etcd take turns through a compare-and-swap on one key, kube-apiserver's own
//! `compact_rev_key` with its protocol, so hosts and kube-apiservers sharing an etcd compact once
//! per interval between them: each interval a host tries to bump the key's version from the
//! version it last saw, writing the revision it saw an interval ago; the one that succeeds
//! compacts to that revision, the others adopt the new version. History younger than one
//! interval is always kept, so a watcher or paged list that started within it can carry on.

use std::sync::Weak;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};
use tokio::sync::oneshot;

use super::{header_revision, Etcd3Store, Inner};
use crate::error::Result;
use crate::periodic::spawn_periodic;

/// The key hosts sharing an etcd coordinate compaction through (kube-apiserver's, unprefixed).
pub(super) const COMPACT_REV_KEY: &str = "compact_rev_key";

/// What a host knows between two intervals: the coordination key's version it last saw and the
/// revision etcd was at then.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Turn {
    version: i64,
    revision: u64,
}

/// Runs compactions every `interval` until `stop` fires or the store is dropped.
pub(super) fn spawn(store: Weak<Inner>, interval: Duration, stop: oneshot::Receiver<()>) {
    spawn_periodic(
        store,
        interval,
        stop,
        Turn::default(),
        |inner, turn| async move {
            match (Etcd3Store { inner }).take_turn(turn).await {
                Ok(next) => next,
                Err(e) => {
                    tracing::warn!(error = %e, "etcd compaction failed");
                    turn
                }
            }
        },
    );
}

impl Etcd3Store {
    /// One interval's try: bump the coordination key if no other host did since `seen`, and if
    /// so compact to the revision `seen` recorded.
    async fn take_turn(&self, seen: Turn) -> Result<Turn> {
        let txn = Txn::new()
            .when([Compare::version(
                COMPACT_REV_KEY,
                CompareOp::Equal,
                seen.version,
            )])
            .and_then([TxnOp::put(COMPACT_REV_KEY, seen.revision.to_string(), None)])
            .or_else([TxnOp::get(COMPACT_REV_KEY, None)]);
        // Sent again after an unknown outcome, a bump that did apply fails its compare and this
        // host adopts the version: at worst one interval passes without a compaction.
        let resp = self.read_txn(txn).await?;
        let now = header_revision(resp.header())?;
        if !resp.succeeded() {
            let version = resp
                .op_responses()
                .into_iter()
                .find_map(|op| match op {
                    TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.version()),
                    _ => None,
                })
                .unwrap_or(0);
            return Ok(Turn {
                version,
                revision: now,
            });
        }
        // The first turn only records where etcd is.
        if seen.revision > 0 {
            self.compact(seen.revision).await?;
            tracing::info!(revision = seen.revision, "etcd history compacted");
        }
        Ok(Turn {
            version: seen.version + 1,
            revision: now,
        })
    }
}
