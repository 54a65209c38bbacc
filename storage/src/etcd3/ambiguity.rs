//! Finds out what became of a write whose outcome etcd did not tell (its connection broke or
//! timed out, or etcd answered "request timed out" across a leader change): read the key back
//! and, when it no longer is as the write expected, find the write that changed it first.
//!
//! A write is recognisable in the key's history: a create or update by the exact bytes it put
//! (an object's uid, managed fields and content make them its own), a delete as the deletion
//! that followed the revision it expected. Two deletes racing with the same precondition are
//! the one case this cannot tell apart (either is taken as this one).
//!
//! A create needs one more thing before it may be sent again. Its precondition — the key does
//! not exist — holds again once the object is deleted, so a copy that etcd has not yet seen
//! (held in a stalled member's socket, or a proposal a deposed leader forwards late) could
//! still create the object after the copy sent again was acknowledged and the object deleted.
//! Each create attempt is therefore fenced: its transaction also requires that a fence key of
//! its own (`{prefix}.fences/{token}`) does not exist, and reading back such a create puts that
//! key in the same transaction, so a copy still on its way can never apply afterwards. Fences
//! are never removed (removing one would let that copy apply); there is one per create whose
//! outcome was unknown, a few dozen bytes each.

use etcd_client::{EventType, GetOptions as EtcdGet, KeyValue, Txn, TxnOp, TxnOpResponse};
use etcd_client::{TxnResponse, WatchOptions};

use super::kv::{kv, raw_value, watch_client};
use super::{from_etcd_revision, to_etcd_revision, Etcd3Store};
use crate::error::{Result, StorageError};
use crate::txn::{CasOutcome, RawValue};

/// What a compare-and-swap writes.
#[derive(Debug, Clone, Copy)]
pub(super) enum CasWrite<'a> {
    /// Puts these bytes.
    Put(&'a [u8]),
    /// Deletes the key.
    Delete,
}

/// What became of a write whose outcome was unknown.
#[derive(Debug)]
pub(super) enum Resolution {
    /// It was applied, at this revision.
    Landed(u64),
    /// The key is still as the write expected: not applied. Sending it again cannot apply it
    /// twice: an update or delete as only one copy's precondition can hold, a create as its
    /// fence now stops the first copy.
    NotYet,
    /// Another write came first, so this one never applies; the key's current state.
    Lost(Option<RawValue>),
}

impl Resolution {
    /// The compare-and-swap outcome this settles; `None` while the write has not landed.
    pub(super) fn settled(self) -> Option<CasOutcome> {
        match self {
            Resolution::Landed(revision) => Some(CasOutcome::Committed(revision)),
            Resolution::Lost(current) => Some(CasOutcome::Stale(current)),
            Resolution::NotYet => None,
        }
    }
}

/// The first change to a key after a revision.
enum Change {
    Put(KeyValue),
    Delete(u64),
}

impl Etcd3Store {
    /// A new fence key for one create attempt (see the module's documentation).
    pub(super) fn fence_key(&self) -> String {
        format!("{}{:032x}", self.fence_prefix(), rand::random::<u128>())
    }

    /// Where fence keys live, under the prefix (never an object's key: no resource's name
    /// starts with a dot).
    pub(super) fn fence_prefix(&self) -> String {
        format!("{}.fences/", self.inner.prefix)
    }

    /// What became of a write to `full_key` made on the condition that its mod_revision was
    /// `expected` (0: that it did not exist, and that `fence` did not exist either).
    ///
    /// # Errors
    /// etcd cannot be read, or the history needed was compacted away.
    pub(super) async fn resolve(
        &self,
        full_key: &str,
        expected: u64,
        write: CasWrite<'_>,
        fence: Option<&str>,
    ) -> Result<Resolution> {
        let current = match fence {
            Some(fence) => self.fence_and_read(full_key, fence).await?,
            None => self
                .read(|client| {
                    let key = full_key.to_owned();
                    async move { kv(&client).get(key, None).await }
                })
                .await?
                .kvs()
                .to_vec(),
        };
        let found = current.first();
        let mod_revision = found.map(|kv| from_etcd_revision(kv.mod_revision()));
        let still_expected = match expected {
            0 => found.is_none(),
            e => mod_revision == Some(e),
        };
        if still_expected {
            return Ok(Resolution::NotYet);
        }
        let first = match found {
            // A create is the write that made the key as it now exists.
            Some(now) if expected == 0 => self.read_at(full_key, now.create_revision()).await?,
            _ => self.first_change_after(full_key, expected).await?,
        };
        let landed = match (first, write) {
            (Change::Put(kv), CasWrite::Put(data)) if kv.value() == data => {
                Some(from_etcd_revision(kv.mod_revision()))
            }
            (Change::Delete(revision), CasWrite::Delete) => Some(revision),
            _ => None,
        };
        Ok(match landed {
            Some(revision) => Resolution::Landed(revision),
            None => Resolution::Lost(
                found
                    .map(|kv| raw_value(self.encryption(), kv))
                    .transpose()?,
            ),
        })
    }

    /// Puts `fence` and reads `full_key` in one transaction: the key as it is once the write
    /// fenced can no longer apply. Putting a fence twice changes nothing, so this retries on
    /// another member like a read.
    async fn fence_and_read(&self, full_key: &str, fence: &str) -> Result<Vec<KeyValue>> {
        let txn = Txn::new().and_then([
            TxnOp::put(fence, Vec::<u8>::new(), None),
            TxnOp::get(full_key, None),
        ]);
        let resp: TxnResponse = self.read_txn(txn).await?;
        Ok(resp
            .op_responses()
            .into_iter()
            .find_map(|op| match op {
                TxnOpResponse::Get(get) => Some(get.kvs().to_vec()),
                _ => None,
            })
            .unwrap_or_default())
    }

    /// `full_key` as a put at `revision` left it.
    async fn read_at(&self, full_key: &str, revision: i64) -> Result<Change> {
        let resp = self
            .read(|client| {
                let key = full_key.to_owned();
                let options = EtcdGet::new().with_revision(revision);
                async move { kv(&client).get(key, Some(options)).await }
            })
            .await?;
        resp.kvs()
            .first()
            .cloned()
            .map(Change::Put)
            .ok_or_else(|| StorageError::Internal(format!("{full_key} not found at {revision}")))
    }

    /// The first change to `full_key` after revision `after`, replayed from etcd's history.
    async fn first_change_after(&self, full_key: &str, after: u64) -> Result<Change> {
        let start = to_etcd_revision(after + 1)?;
        let replay = |client: std::sync::Arc<etcd_client::Client>| {
            let key = full_key.to_owned();
            async move {
                let options = WatchOptions::new().with_start_revision(start);
                let mut stream = watch_client(&client).watch(key, Some(options)).await?;
                while let Some(resp) = stream.message().await? {
                    if resp.canceled() || resp.compact_revision() > 0 {
                        return Ok(None);
                    }
                    if let Some(event) = resp.events().first() {
                        return Ok(event.kv().map(|kv| match event.event_type() {
                            EventType::Put => Change::Put(kv.clone()),
                            EventType::Delete => {
                                Change::Delete(from_etcd_revision(kv.mod_revision()))
                            }
                        }));
                    }
                }
                Ok(None)
            }
        };
        self.read(replay).await?.ok_or_else(|| {
            StorageError::Unavailable(format!(
                "the history of {full_key} after revision {after} is compacted"
            ))
        })
    }
}
