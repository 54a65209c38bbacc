//! Concurrent single-key reads share etcd requests: the reads that arrive while one request is
//! in flight go out together in the next, as one read-only transaction of a range per key.
//!
//! Each answer is linearizable for every read in the batch: the transaction is sent after all
//! of them arrived, and etcd serves a read-only transaction at a revision it confirmed with the
//! leader then. One request of many keys costs etcd one linearizable read and one gRPC call
//! instead of one each, which is where a consistent GET's time goes on etcd.

use std::sync::Mutex;

use etcd_client::{KeyValue, Txn, TxnOp, TxnOpResponse};
use tokio::sync::oneshot;

use super::kv::kv;
use super::{header_revision, Etcd3Store};
use crate::error::{Result, StorageError};

/// etcd refuses transactions of more operations than this (its `--max-txn-ops` default).
const MAX_TXN_OPS: usize = 128;

/// One key as etcd answered it.
pub(super) struct KeyRead {
    /// The revision etcd read at.
    pub(super) revision: u64,
    /// The key's state then, when it exists.
    pub(super) found: Option<KeyValue>,
}

/// A read waiting for its batch.
struct Waiting {
    full_key: String,
    answer: oneshot::Sender<Result<KeyRead>>,
}

/// The reads waiting for the next request, and whether a sender is running.
#[derive(Default)]
pub(super) struct ReadBatches {
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiting>,
    sending: bool,
}

impl Etcd3Store {
    /// A linearizable read of `full_key`, sent with the other reads waiting beside it.
    ///
    /// # Errors
    /// `Unavailable` when no member answers; `Internal` for an unexpected answer.
    pub(super) async fn read_key(&self, full_key: String) -> Result<KeyRead> {
        let (answer, answered) = oneshot::channel();
        let start_sender = {
            let mut queue = self.batches().lock().unwrap_or_else(|e| e.into_inner());
            queue.waiting.push(Waiting { full_key, answer });
            !std::mem::replace(&mut queue.sending, true)
        };
        if start_sender {
            let store = self.clone();
            tokio::spawn(async move { store.send_batches().await });
        }
        answered
            .await
            .map_err(|_| StorageError::Internal("a batched read was dropped".into()))?
    }

    fn batches(&self) -> &Mutex<Queue> {
        &self.inner.read_batches.queue
    }

    /// Sends what is waiting, one request at a time, until nothing is.
    async fn send_batches(&self) {
        loop {
            let batch: Vec<Waiting> = {
                let mut queue = self.batches().lock().unwrap_or_else(|e| e.into_inner());
                if queue.waiting.is_empty() {
                    queue.sending = false;
                    return;
                }
                let n = queue.waiting.len().min(MAX_TXN_OPS);
                queue.waiting.drain(..n).collect()
            };
            let keys: Vec<String> = batch.iter().map(|w| w.full_key.clone()).collect();
            match self.read_keys(keys).await {
                Ok(reads) => {
                    for (waiting, read) in batch.into_iter().zip(reads) {
                        let _ = waiting.answer.send(Ok(read));
                    }
                }
                Err(e) => {
                    for waiting in batch {
                        let _ = waiting.answer.send(Err(copy_of(&e)));
                    }
                }
            }
        }
    }

    /// One request reading `keys`: a plain range for one, a read-only transaction for more.
    async fn read_keys(&self, keys: Vec<String>) -> Result<Vec<KeyRead>> {
        if let [key] = keys.as_slice() {
            let mut resp = self
                .read(|client| {
                    let key = key.clone();
                    async move { kv(&client).get(key, None).await }
                })
                .await?;
            let revision = header_revision(resp.header())?;
            let found = resp.take_kvs().into_iter().next();
            return Ok(vec![KeyRead { revision, found }]);
        }
        let txn = Txn::new().and_then(
            keys.iter()
                .map(|k| TxnOp::get(k.as_str(), None))
                .collect::<Vec<_>>(),
        );
        let resp = self.read_txn(txn).await?;
        let revision = header_revision(resp.header())?;
        let reads: Vec<KeyRead> = resp
            .op_responses()
            .into_iter()
            .filter_map(|op| match op {
                TxnOpResponse::Get(mut get) => Some(KeyRead {
                    revision,
                    found: get.take_kvs().into_iter().next(),
                }),
                _ => None,
            })
            .collect();
        if reads.len() != keys.len() {
            return Err(StorageError::Internal(format!(
                "etcd answered {} of {} reads in a transaction",
                reads.len(),
                keys.len()
            )));
        }
        Ok(reads)
    }
}

/// The same failure for another read of the batch.
fn copy_of(e: &StorageError) -> StorageError {
    match e {
        StorageError::Unavailable(m) => StorageError::Unavailable(m.clone()),
        other => StorageError::Internal(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::EtcdServer;
    use crate::{GetOptions, Storage};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_gets_share_requests_and_each_sees_its_own_key() {
        let etcd = EtcdServer::start_in_test().await;
        let store = etcd.connect_store().await;
        let names: Vec<String> = (0..50).map(|i| format!("o{i}")).collect();
        for name in &names {
            let obj =
                json!({"metadata": {"name": name, "namespace": "ns"}, "spec": {"name": name}});
            store
                .create(&format!("/g/things/ns/{name}"), obj)
                .await
                .unwrap();
        }
        let requests = || etcd.grpc_calls_handled("Range") + etcd.grpc_calls_handled("Txn");
        let before = requests();
        let reads = 400;
        let gets = (0..reads).map(|i| {
            let (store, name) = (store.clone(), names[i % names.len()].clone());
            tokio::spawn(async move {
                let key = format!("/g/things/ns/{name}");
                let got = store
                    .get(&key, GetOptions::default())
                    .await
                    .unwrap()
                    .unwrap();
                (name, got)
            })
        });
        let missing = store
            .get("/g/things/ns/missing", GetOptions::ignoring_not_found())
            .await
            .unwrap();
        assert_eq!(missing, None);
        for got in futures::future::join_all(gets).await {
            let (name, got) = got.unwrap();
            assert_eq!(
                got["spec"]["name"],
                json!(name),
                "a read answered with another key"
            );
        }
        let sent = requests() - before;
        assert!(
            sent < reads as u64 / 2,
            "{reads} concurrent gets sent {sent} requests: they should share them"
        );
    }
}
