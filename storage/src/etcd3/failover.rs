//! Runs one etcd request on a member in rotation, and again on another member when that is safe:
//! a read whenever the member failed, a write only when etcd surely never applied it.
//!
//! A failed attempt is classified ([`Failure`]). A member that could not be reached, or whose
//! connection broke or timed out, leaves the rotation. A read is retried on the next member, and
//! one unanswered for a second is sent again to the next member each second (the first answer
//! wins), so a member holding it costs a second, not the budget; a
//! write only when the connection was never made or etcd answered that it did not take the
//! write. Any other failure of a write may hide a committed write: it is reported as such
//! ([`WriteFailure::may_have_applied`]), for the caller to find out what happened (see
//! `ambiguity`). Retries end with the request's budget
//! ([`Etcd3Config::request_timeout`](super::Etcd3Config::request_timeout)).

use std::error::Error as _;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::Client;
use futures::StreamExt as _;

use super::endpoints::Endpoints;
use super::errors::map_error;
use super::Etcd3Store;
use crate::error::{Result, StorageError};

/// A write's attempts share its budget this many ways: a member that swallows a write (paused,
/// or a leader that died with the proposal) costs one attempt, then the write's outcome is read
/// back and it goes to another member, within the budget.
const WRITE_ATTEMPTS_PER_BUDGET: u32 = 4;

/// A read not answered within this is also sent to another member, and the first answer wins:
/// a member that holds requests without failing them (paused, or waiting on a leader that
/// died, which etcd gives up on only after its own 7 s) costs a read this long, not its budget.
const HEDGE_AFTER: Duration = Duration::from_secs(1);
/// How long a request goes on retrying once a whole round of members refused the connection
/// (or failed its TLS handshake): long enough to ride out a member's restart on the same
/// address, short enough that a client learns of an outage in well under a second. Each retry
/// connects afresh, so the first request after etcd is back succeeds.
const UNREACHABLE_GRACE: Duration = Duration::from_millis(500);
/// Copies of one read in flight at most.
const READ_COPIES: usize = 3;

/// The pause before going round the members again once each was tried; doubled up to
/// `MAX_ROUND_PAUSE`.
const FIRST_ROUND_PAUSE: Duration = Duration::from_millis(25);
const MAX_ROUND_PAUSE: Duration = Duration::from_millis(500);

/// etcd's answers for a request it turned away before proposing it to raft, so a write that got
/// one was not applied: no leader (with require-leader), a dropped proposal (no leader yet
/// during an election), too many pending proposals.
const NOT_APPLIED: [&str; 3] = [
    "etcdserver: no leader",
    "raft proposal dropped",
    "etcdserver: too many requests",
];

/// Which requests may run again on another member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Retry {
    /// Reads (and compaction): running one twice changes nothing.
    Always,
    /// Writes: only when etcd surely did not apply the first attempt.
    IfNotApplied,
}

/// How one attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// No connection to the member could be made: the request never left.
    NotSent,
    /// The connection broke, or the attempt timed out, after the request may have reached etcd.
    Lost,
    /// etcd turned the request away before applying it (see [`NOT_APPLIED`]).
    NotApplied,
    /// etcd answered "unavailable" in a way that may follow an applied write (e.g. its own
    /// proposal timeout, a leader change).
    Busy,
    /// etcd's answer to the request itself (compacted, invalid, ...): the same elsewhere.
    Answer,
}

impl Failure {
    /// Whether the member should leave the rotation.
    fn member_is_down(self) -> bool {
        matches!(self, Failure::NotSent | Failure::Lost)
    }

    fn may_retry(self, retry: Retry) -> bool {
        match self {
            Failure::NotSent | Failure::NotApplied => true,
            Failure::Lost | Failure::Busy => retry == Retry::Always,
            Failure::Answer => false,
        }
    }
}

/// Classifies an `etcd-client` error.
fn classify(e: &etcd_client::Error) -> Failure {
    use etcd_client::Error as E;
    match e {
        E::GRpcStatus(status) => {
            if caused_by_connect(status) {
                Failure::NotSent
            } else if status.source().is_some() {
                // tonic builds statuses from client-side transport errors with the error as
                // their source; statuses etcd sent have none.
                Failure::Lost
            } else if NOT_APPLIED.iter().any(|m| status.message().contains(m)) {
                Failure::NotApplied
            } else {
                // gRPC codes 1 Cancelled, 2 Unknown, 4 DeadlineExceeded, 8 ResourceExhausted,
                // 10 Aborted, 14 Unavailable: what etcd answers while it cannot serve.
                match i32::from(status.code()) {
                    1 | 2 | 4 | 8 | 10 | 14 => Failure::Busy,
                    _ => Failure::Answer,
                }
            }
        }
        E::TransportError(t) if caused_by_connect(t) => Failure::NotSent,
        E::TransportError(_) | E::IoError(_) | E::WatchError(_) => Failure::Lost,
        _ => Failure::Answer,
    }
}

/// Whether `error` comes from making the connection (TCP connect, its timeout, TLS handshake),
/// which tonic reports as a `ConnectError` somewhere in the chain.
fn caused_by_connect(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.is::<tonic::ConnectError>() {
            return true;
        }
        next = e.source();
    }
    false
}

/// A write that failed, and whether etcd may have applied it all the same.
#[derive(Debug)]
pub(super) struct WriteFailure {
    /// What to answer when the outcome stays unknown (`Unavailable`, naming the member).
    pub(super) error: StorageError,
    /// The request may have reached etcd and been committed (its connection broke or timed
    /// out, or etcd answered in a way that may follow an applied write).
    pub(super) may_have_applied: bool,
}

/// [`attempt`] for the startup checks: it goes on retrying for all of `budget` even while no member
/// can be connected to, since etcd may still be starting beside the host.
pub(super) async fn run_patiently<T, F, Fut>(
    endpoints: &Endpoints,
    budget: Duration,
    op: F,
) -> Result<T>
where
    F: FnMut(Arc<Client>) -> Fut,
    Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
{
    attempt(endpoints, Retry::Always, budget, Patience::WholeBudget, op)
        .await
        .map_err(|failure| failure.error)
}

/// Whether a request gives up early when no member can be connected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Patience {
    /// After [`UNREACHABLE_GRACE`]: serving requests.
    FailFast,
    /// Only at the end of the budget: waiting for etcd at startup.
    WholeBudget,
}

/// Runs `op` on a member of `endpoints` in rotation, retrying per `retry` within `budget`, and
/// tells whether the last attempt may have been applied when it fails. Each attempt of a read
/// may take up to `budget` itself (a write's, a share of it: see
/// [`WRITE_ATTEMPTS_PER_BUDGET`]): a member that swallows requests costs one request its
/// budget, and leaves the rotation for the next ones.
async fn attempt<T, F, Fut>(
    endpoints: &Endpoints,
    retry: Retry,
    budget: Duration,
    patience: Patience,
    mut op: F,
) -> std::result::Result<T, WriteFailure>
where
    F: FnMut(Arc<Client>) -> Fut,
    Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
{
    let mut give_up_at = Instant::now() + budget;
    let per_attempt = match retry {
        Retry::Always => budget,
        Retry::IfNotApplied => budget / WRITE_ATTEMPTS_PER_BUDGET,
    };
    let mut tried = Vec::new();
    let mut pause = FIRST_ROUND_PAUSE;
    // Whether every member tried this round refused the connection.
    let mut round_unreachable = true;
    loop {
        let Some(member) = endpoints.pick(&tried) else {
            // Every member failed this round (all down, or an election): pause, go round again.
            if round_unreachable && patience == Patience::FailFast {
                give_up_at = give_up_at.min(Instant::now() + UNREACHABLE_GRACE);
            }
            round_unreachable = true;
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_ROUND_PAUSE);
            tried.clear();
            continue;
        };
        let (index, outcome) = match retry {
            Retry::Always => hedged(endpoints, &tried, member, per_attempt, &mut op).await,
            Retry::IfNotApplied => (
                member.index,
                tokio::time::timeout(per_attempt, op(member.client)).await,
            ),
        };
        let (failure, error) = match outcome {
            Ok(Ok(value)) => {
                endpoints.mark_up(index);
                return Ok(value);
            }
            Ok(Err(e)) => (classify(&e), map_error(e)),
            Err(_) => (
                Failure::Lost,
                StorageError::Unavailable(format!("etcd request timed out after {per_attempt:?}")),
            ),
        };
        let error = at_member(error, endpoints.url(index));
        if failure.member_is_down() {
            endpoints.mark_down(index, &error.to_string());
        }
        round_unreachable &= failure == Failure::NotSent;
        let out_of_time = Instant::now() + pause >= give_up_at;
        if !failure.may_retry(retry) || out_of_time {
            let may_have_applied = matches!(failure, Failure::Lost | Failure::Busy);
            return Err(WriteFailure {
                error,
                may_have_applied,
            });
        }
        tracing::debug!(error = %error, "retrying the etcd request on another member");
        tried.push(index);
    }
}

/// What one attempt came to: the operation's result, or its timeout.
type Outcome<T> =
    std::result::Result<std::result::Result<T, etcd_client::Error>, tokio::time::error::Elapsed>;

/// Runs a read on `member` and, each [`HEDGE_AFTER`] it goes unanswered, again on the next
/// member in rotation (at most [`READ_COPIES`] at once), returning the first success, or when
/// every copy failed the last failure, with the index of the member that gave it. A fresh copy
/// also gets past reads a member holds from before a leader change, which etcd gives up on only
/// after its own request timeout. When a later copy wins, the first member leaves the rotation.
async fn hedged<T, F, Fut>(
    endpoints: &Endpoints,
    tried: &[usize],
    member: super::endpoints::Picked,
    per_attempt: Duration,
    op: &mut F,
) -> (usize, Outcome<T>)
where
    F: FnMut(Arc<Client>) -> Fut,
    Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
{
    let deadline = tokio::time::Instant::now() + per_attempt;
    let first = member.index;
    let copy = |index: usize, fut: Fut| async move {
        (index, tokio::time::timeout_at(deadline, fut).await)
    };
    let mut running = futures::stream::FuturesUnordered::new();
    running.push(copy(first, op(member.client)));
    let mut asked = tried.to_vec();
    asked.push(first);
    loop {
        let hedge = tokio::time::sleep(HEDGE_AFTER.min(per_attempt));
        tokio::select! {
            Some((index, done)) = running.next() => {
                if matches!(done, Ok(Ok(_))) || running.is_empty() {
                    if index != first && matches!(done, Ok(Ok(_))) {
                        endpoints.mark_down(
                            first,
                            &format!("a read waited over {HEDGE_AFTER:?} while another member answered it"),
                        );
                    }
                    return (index, done);
                }
            }
            () = hedge, if running.len() < READ_COPIES => {
                let other = endpoints.pick(&asked).or_else(|| {
                    asked.clear();
                    endpoints.pick(&[])
                });
                if let Some(other) = other {
                    tracing::debug!(
                        member = endpoints.url(first),
                        other = endpoints.url(other.index),
                        "an etcd read is slow; asking another member too"
                    );
                    asked.push(other.index);
                    running.push(copy(other.index, op(other.client)));
                }
            }
        }
    }
}

/// Names the member in an `Unavailable` error, so an operator sees which one failed.
fn at_member(error: StorageError, url: &str) -> StorageError {
    match error {
        StorageError::Unavailable(message) => {
            StorageError::Unavailable(format!("{message} (etcd member {url})"))
        }
        other => other,
    }
}

impl Etcd3Store {
    /// Runs `txn` as a read (a transaction that may run twice: reads only, or writes guarded
    /// by compares that fail the second time), on a member in rotation.
    pub(super) async fn read_txn(&self, txn: etcd_client::Txn) -> Result<etcd_client::TxnResponse> {
        self.read(|client| {
            let txn = txn.clone();
            async move { super::kv::kv(&client).txn(txn).await }
        })
        .await
    }

    /// Runs a read (or any request that may run twice) on a member in rotation, on another
    /// one when it fails.
    pub(super) async fn read<T, F, Fut>(&self, op: F) -> Result<T>
    where
        F: FnMut(Arc<Client>) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        self.on_members(Retry::Always, op)
            .await
            .map_err(|failure| failure.error)
    }

    /// Runs a write on a member in rotation, on another one only when etcd surely did not
    /// apply it.
    pub(super) async fn write<T, F, Fut>(&self, op: F) -> std::result::Result<T, WriteFailure>
    where
        F: FnMut(Arc<Client>) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        self.on_members(Retry::IfNotApplied, op).await
    }

    /// [`attempt`] on this store's members within its request timeout, failing fast when
    /// none can be connected to.
    async fn on_members<T, F, Fut>(
        &self,
        retry: Retry,
        op: F,
    ) -> std::result::Result<T, WriteFailure>
    where
        F: FnMut(Arc<Client>) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        let budget = self.request_timeout();
        attempt(&self.inner.endpoints, retry, budget, Patience::FailFast, op).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_surely_did_not_apply_retries_a_write() {
        let etcd = |code, message: &str| {
            classify(&etcd_client::Error::GRpcStatus(tonic::Status::new(
                code, message,
            )))
        };
        assert_eq!(
            etcd(tonic::Code::Unavailable, "etcdserver: no leader"),
            Failure::NotApplied
        );
        assert_eq!(
            etcd(tonic::Code::Unknown, "raft proposal dropped"),
            Failure::NotApplied
        );
        let timed_out = etcd(tonic::Code::Unavailable, "etcdserver: request timed out");
        assert_eq!(timed_out, Failure::Busy);
        assert!(timed_out.may_retry(Retry::Always) && !timed_out.may_retry(Retry::IfNotApplied));
        let compacted = etcd(
            tonic::Code::OutOfRange,
            "etcdserver: mvcc: required revision has been compacted",
        );
        assert_eq!(compacted, Failure::Answer);
        assert!(!compacted.may_retry(Retry::Always));
        let broken = classify(&etcd_client::Error::WatchError("closed".into()));
        assert!(broken.member_is_down() && !broken.may_retry(Retry::IfNotApplied));
    }
}
