//! Compaction: dropping the versions no revision at or after the compacted one can still need,
//! and the background task that compacts periodically (as kube-apiserver's compactor does).

use std::collections::BTreeSet;
use std::sync::Weak;
use std::time::Duration;

use redb::ReadableTable;
use tokio::sync::oneshot;

use super::schema::{db_err, decode_version};
use super::tables::Tables;
use super::Inner;
use crate::error::Result;
use crate::periodic::spawn_periodic;

/// Compacts from `compacted` (exclusive) to `revision` (inclusive) inside the writer's
/// transaction: removes the log entries up to `revision` and, for every key they name, every
/// version at or before `revision` except the newest when it is not a tombstone. Reads and
/// watches at `revision` and later keep working.
pub(crate) fn compact_tables(t: &mut Tables<'_>, compacted: u64, revision: u64) -> Result<()> {
    let mut keys = BTreeSet::new();
    for entry in t
        .log
        .range(compacted.saturating_add(1)..=revision)
        .map_err(|e| db_err("compact: scan log", e))?
    {
        let (_, key) = entry.map_err(|e| db_err("compact: scan log", e))?;
        keys.insert(key.value().to_string());
    }
    t.log
        .retain_in(..=revision, |_, _| false)
        .map_err(|e| db_err("compact: trim log", e))?;
    for key in &keys {
        let mut versions = Vec::new();
        for entry in t
            .history
            .range((key.as_str(), 0u64)..=(key.as_str(), revision))
            .map_err(|e| db_err("compact: scan history", e))?
        {
            let (k, v) = entry.map_err(|e| db_err("compact: scan history", e))?;
            versions.push((k.value().1, decode_version(v.value())?.is_none()));
        }
        let keep = match versions.last() {
            Some(&(rev, false)) => Some(rev),
            _ => None,
        };
        for (rev, _) in versions {
            if Some(rev) != keep {
                t.history
                    .remove((key.as_str(), rev))
                    .map_err(|e| db_err("compact: trim history", e))?;
            }
        }
    }
    Ok(())
}

/// Compacts every `interval` to the revision that was current at the previous tick, until the
/// store is dropped (`stop` resolves) or no longer reachable.
pub(crate) fn spawn_auto(store: Weak<Inner>, interval: Duration, stop: oneshot::Receiver<()>) {
    // The first step (at once) only notes the revision; the next compacts to it.
    spawn_periodic(
        store,
        interval,
        stop,
        None,
        |inner, previous: Option<u64>| async move {
            let now = inner.current_revision();
            if let Some(target) = previous.filter(|&t| t > inner.compacted_revision()) {
                match inner.compact(target).await {
                    Ok(()) => tracing::debug!(revision = target, "embedded store compacted"),
                    Err(e) => tracing::warn!(error = %e, "embedded store: compaction failed"),
                }
            }
            Some(now)
        },
    );
}
