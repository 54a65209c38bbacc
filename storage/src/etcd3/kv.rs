//! Single-key reads, counts, the current revision, and the compare-and-swap primitives
//! (`txn::CasStore`) as etcd transactions on a key's mod_revision.

use async_trait::async_trait;
use etcd_client::{Client, Compare, CompareOp, DeleteOptions, GetOptions as EtcdGet, Txn, TxnOp};
use etcd_client::{KeyValue, KvClient, TxnOpResponse, TxnResponse, WatchClient, WatchOptions};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::ambiguity::CasWrite;
use super::{from_etcd_revision, header_revision, to_etcd_revision, Etcd3Store};
use crate::encryption::Encryption;
use crate::error::{Result, StorageError};
use crate::key;
use crate::object::SharedObject;
use crate::options::GetOptions;
use crate::txn::{CasOutcome, CasStore, RawValue};
use crate::versioner::{decode_from_storage, parse_resource_version};

/// Responses as large as etcd may send (Kubernetes lifts gRPC's 4 MiB default too).
const MAX_RESPONSE_BYTES: usize = i32::MAX as usize;

/// A KV client on a member's connection.
pub(super) fn kv(client: &Client) -> KvClient {
    client
        .kv_client()
        .max_decoding_message_size(MAX_RESPONSE_BYTES)
}

/// A watch client on a member's connection.
pub(super) fn watch_client(client: &Client) -> WatchClient {
    client
        .watch_client()
        .max_decoding_message_size(MAX_RESPONSE_BYTES)
}

impl Etcd3Store {
    /// etcd's compacted revision (the oldest revision still readable), learnt from the
    /// cancellation of a watch at revision 1. Only meaningful once something was compacted.
    pub(super) async fn compacted_revision(&self) -> Result<u64> {
        let wait = self.request_timeout().min(Duration::from_secs(2));
        let probe = |client: Arc<Client>| {
            let prefix = self.inner.prefix.clone();
            async move {
                let mut client = watch_client(&client);
                let watch = async move {
                    let options = WatchOptions::new().with_start_revision(1);
                    let mut stream = client.watch(prefix, Some(options)).await?;
                    while let Some(resp) = stream.message().await? {
                        if resp.compact_revision() > 0 || resp.canceled() {
                            return Ok(from_etcd_revision(resp.compact_revision()));
                        }
                    }
                    Ok(0)
                };
                // Silence means nothing was compacted, not that the member is down.
                tokio::time::timeout(wait, watch).await.unwrap_or(Ok(0))
            }
        };
        match self.read(probe).await? {
            0 => Err(StorageError::Internal("etcd reported no compaction".into())),
            revision => Ok(revision),
        }
    }

    /// `Storage::get` and `Storage::get_shared`: the latest state (read in a batch with the
    /// other reads waiting, see `batch.rs`), which must be at least as fresh as a given
    /// revision, made by `read` from the key and its stored value.
    pub(super) async fn get_object<T>(
        &self,
        key: &str,
        opts: GetOptions,
        read: fn(&Encryption, &str, &KeyValue) -> Result<T>,
    ) -> Result<Option<T>> {
        let full_key = self.full_key(key)?;
        let min_revision = parse_resource_version(&opts.resource_version)?;
        let answer = self.read_key(full_key.clone()).await?;
        let current = answer.revision;
        if let Some(requested) = min_revision.filter(|&r| r > current) {
            return Err(StorageError::TooLargeResourceVersion { requested, current });
        }
        match answer.found {
            Some(found) => read(self.encryption(), &full_key, &found).map(Some),
            None if opts.ignore_not_found => Ok(None),
            None => Err(StorageError::not_found(full_key)),
        }
    }

    /// `Storage::count`: the number of keys under `key/`.
    pub(super) async fn count_keys(&self, key: &str) -> Result<u64> {
        self.count_under(key::recursive_prefix(&self.full_key(key)?))
            .await
    }

    /// How many keys etcd holds under the full key prefix `prefix` (a count-only range).
    pub(super) async fn count_under(&self, prefix: String) -> Result<u64> {
        let options = EtcdGet::new()
            .with_range(key::prefix_range_end(&prefix))
            .with_count_only();
        let resp = self
            .read(|client| {
                let (prefix, options) = (prefix.clone(), options.clone());
                async move { kv(&client).get(prefix, Some(options)).await }
            })
            .await?;
        Ok(from_etcd_revision(resp.count()))
    }

    /// `Storage::current_revision`: the header of a count-only read of one key.
    pub(super) async fn read_current_revision(&self) -> Result<u64> {
        // A linearizable read of one key (the prefix itself, never an object's key): its
        // header carries the current revision, and etcd looks up one key, not a range.
        let resp = self
            .read(|client| {
                let prefix = self.inner.prefix.clone();
                async move {
                    let options = EtcdGet::new().with_count_only();
                    kv(&client).get(prefix, Some(options)).await
                }
            })
            .await?;
        header_revision(resp.header())
    }

    /// `Storage::unchanged_since` in one read-only transaction: if every key under the
    /// prefix has a mod_revision ≤ `revision` (etcd compares a whole range), count them. Its
    /// answer is a few bytes whatever the prefix holds.
    pub(super) async fn prove_unchanged_since(
        &self,
        key: &str,
        revision: u64,
        count: u64,
    ) -> Result<Option<u64>> {
        let prefix = key::recursive_prefix(&self.full_key(key)?);
        let end = key::prefix_range_end(&prefix);
        let unchanged = Compare::mod_revision(
            prefix.clone(),
            CompareOp::Less,
            to_etcd_revision(revision.saturating_add(1))?,
        )
        .with_range(end.clone());
        let count_keys = TxnOp::get(
            prefix,
            Some(EtcdGet::new().with_range(end).with_count_only()),
        );
        let txn = Txn::new().when([unchanged]).and_then([count_keys]);
        let resp = self.read_txn(txn).await?;
        if !resp.succeeded() {
            return Ok(None);
        }
        let counted = resp.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => Some(from_etcd_revision(get.count())),
            _ => None,
        });
        if counted != Some(count) {
            return Ok(None);
        }
        header_revision(resp.header()).map(Some)
    }

    /// Runs a transaction "if `full_key`'s mod_revision is `expected` (0: it does not exist, nor
    /// does this attempt's fence) then `write` else get `full_key`". When an attempt's outcome
    /// is unknown, what became of it is found out ([`Etcd3Store::resolve`]) and answered:
    /// applied, lost to another write, or not applied and sent again, within the request's
    /// budget.
    async fn cas(&self, full_key: &str, expected: u64, write: CasWrite<'_>) -> Result<CasOutcome> {
        let then = match write {
            CasWrite::Put(data) => TxnOp::put(full_key, data, None),
            CasWrite::Delete => TxnOp::delete(full_key, Some(DeleteOptions::new().with_prev_key())),
        };
        let began = Instant::now();
        let mut sent_before = false;
        loop {
            // A create's attempts each carry a fence of their own (see `ambiguity`).
            let fence = (expected == 0).then(|| self.fence_key());
            let compare = match (expected, &fence) {
                (0, Some(fence)) => vec![
                    Compare::create_revision(full_key, CompareOp::Equal, 0),
                    Compare::version(fence.as_str(), CompareOp::Equal, 0),
                ],
                (e, _) => vec![Compare::mod_revision(
                    full_key,
                    CompareOp::Equal,
                    to_etcd_revision(e)?,
                )],
            };
            let txn = Txn::new()
                .when(compare)
                .and_then([then.clone()])
                .or_else([TxnOp::get(full_key, None)]);
            let error = match self
                .write(|client| {
                    let txn = txn.clone();
                    async move { kv(&client).txn(txn).await }
                })
                .await
            {
                Ok(resp) if resp.succeeded() => {
                    return Ok(CasOutcome::Committed(header_revision(resp.header())?))
                }
                Ok(resp) if !sent_before => {
                    return Ok(CasOutcome::Stale(stale_value(self.encryption(), &resp)?))
                }
                // The earlier copy may be what made this one stale.
                Ok(resp) => {
                    let resolved = self
                        .resolve(full_key, expected, write, fence.as_deref())
                        .await?;
                    return match resolved.settled() {
                        Some(outcome) => Ok(outcome),
                        None => Ok(CasOutcome::Stale(stale_value(self.encryption(), &resp)?)),
                    };
                }
                Err(failure) if !failure.may_have_applied => return Err(failure.error),
                Err(failure) => failure.error,
            };
            if began.elapsed() >= self.request_timeout() {
                return Err(error);
            }
            tracing::info!(key = full_key, %error, "a write's outcome is unknown: reading it back");
            match self
                .resolve(full_key, expected, write, fence.as_deref())
                .await
            {
                Ok(resolved) => match resolved.settled() {
                    Some(outcome) => return Ok(outcome),
                    None => sent_before = true,
                },
                Err(e) => {
                    tracing::warn!(key = full_key, error = %e, "a write's outcome stays unknown");
                    return Err(error);
                }
            }
        }
    }
}

/// The key's current value from the failure branch of a CAS transaction.
fn stale_value(encryption: &Encryption, resp: &TxnResponse) -> Result<Option<RawValue>> {
    resp.op_responses()
        .into_iter()
        .find_map(|op| match op {
            TxnOpResponse::Get(get) => get.kvs().first().map(|kv| raw_value(encryption, kv)),
            _ => None,
        })
        .transpose()
}

/// A stored value as the shared loops see it: plain (decrypted) bytes and its mod_revision.
pub(super) fn raw_value(encryption: &Encryption, found: &KeyValue) -> Result<RawValue> {
    let full_key = String::from_utf8_lossy(found.key());
    encryption.open_raw(
        &full_key,
        found.value(),
        from_etcd_revision(found.mod_revision()),
    )
}

/// A stored object as shared bytes stamped with its mod_revision (no tree parsed).
pub(super) fn shared_kv(
    encryption: &Encryption,
    full_key: &str,
    found: &KeyValue,
) -> Result<Arc<SharedObject>> {
    SharedObject::from_stored(
        full_key,
        &encryption.open(full_key, found.value())?,
        from_etcd_revision(found.mod_revision()),
    )
    .map(Arc::new)
}

/// Decodes a stored object and stamps it with its mod_revision.
pub(super) fn decode_kv(
    encryption: &Encryption,
    full_key: &str,
    found: &KeyValue,
) -> Result<Value> {
    decode_from_storage(
        full_key,
        &encryption.open(full_key, found.value())?,
        from_etcd_revision(found.mod_revision()),
    )
}

#[async_trait]
impl CasStore for Etcd3Store {
    async fn read_latest(&self, full_key: &str) -> Result<Option<RawValue>> {
        let resp = self
            .read(|client| {
                let key = full_key.to_string();
                async move { kv(&client).get(key, None).await }
            })
            .await?;
        resp.kvs()
            .first()
            .map(|kv| raw_value(self.encryption(), kv))
            .transpose()
    }

    async fn put_if(&self, full_key: &str, data: Vec<u8>, expected: u64) -> Result<CasOutcome> {
        let data = self.encryption().seal(full_key, data)?;
        self.cas(full_key, expected, CasWrite::Put(&data)).await
    }

    async fn delete_if(&self, full_key: &str, expected: u64) -> Result<CasOutcome> {
        if expected == 0 {
            return Err(StorageError::BadRequest(format!(
                "deleting {full_key} needs the revision it expects"
            )));
        }
        self.cas(full_key, expected, CasWrite::Delete).await
    }
}
