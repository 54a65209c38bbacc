//! A history of API operations on a few objects, and the checks that it is linearizable (what
//! etcd's robustness tests check of etcd, one layer up).
//!
//! Every write the server acknowledges carries its resourceVersion, a revision of one global
//! order, and a watch delivers every change in that order; so the history needs no search for
//! an order (Wing–Gong's), only checks against the one the server states — all polynomial,
//! written here for that reason rather than with a general-purpose checker. The checks:
//! - the watchers saw the same events in the same order, revisions strictly increasing;
//! - every acknowledged create or update is in that order at its resourceVersion with its
//!   value, every acknowledged delete is the next change of the version it deleted, and no
//!   write the server refused is in it; a compare-and-set landed on the version it expected;
//! - real time: a write that completed before another began has the smaller revision;
//! - a consistent read (GET, LIST) saw the state at a revision no older than any write that
//!   completed before it began, and no write that began after it completed; a
//!   `resourceVersion=0` read no older than what the same client read before from the watch
//!   cache (its `resourceVersion=0` reads and its lists: monotonic reads; it may miss the
//!   client's own latest write, or what a consistent GET read from the store, as Kubernetes'
//!   watch cache may).
//!
//! A watcher that cannot resume (410 Gone after a server restart) relists: its list stands in
//! for the changes it skipped. Where every watcher skipped a stretch, its versions are known
//! only from the lists: an acknowledged write there must be in the next list or replaced by a
//! version that is, a deletion is placed at the stretch's end, and reads and compare-and-sets
//! whose outcome depends on what happened inside it are not judged.

use std::collections::{BTreeMap, HashMap};

mod gaps;
mod timeline;
mod watched;

use watched::Merged;
pub use watched::{Relist, Watched};

/// What a list returned: name → (resourceVersion, value).
pub type Listing = BTreeMap<String, (u64, String)>;

/// Microseconds since the history began.
pub type Micros = u64;

/// What an operation did, as its client saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A create or update acknowledged at this resourceVersion.
    Written(u64),
    /// A delete acknowledged.
    Deleted,
    /// The server refused the write (conflict, not found, already exists): it did not happen.
    Refused,
    /// No answer (the connection broke, the server died): it may or may not have happened.
    Unknown,
    /// A single read: the object's (resourceVersion, value), or not found.
    Got(Option<(u64, String)>),
    /// A list at resourceVersion L: name → (resourceVersion, value).
    Listed(u64, Listing),
}

/// What an operation asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Create `key` with `value`.
    Create { key: String, value: String },
    /// Update `key` to `value` if its resourceVersion is `expected`.
    Update {
        key: String,
        value: String,
        expected: u64,
    },
    /// Delete `key` if its resourceVersion is `expected`.
    Delete { key: String, expected: u64 },
    /// Read `key`; `consistent` unless `resourceVersion=0`.
    Get { key: String, consistent: bool },
    /// List every key, consistently.
    List,
}

/// One operation: who, what, when, and what came of it.
#[derive(Debug, Clone)]
pub struct Operation {
    pub client: usize,
    pub request: Request,
    pub invoked: Micros,
    pub completed: Micros,
    pub outcome: Outcome,
}

/// One change a watch delivered: (resourceVersion, key, value; `None` for a deletion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub revision: u64,
    pub key: String,
    pub value: Option<String>,
}

/// Checks `operations` against what `watches` delivered; returns every violation found.
pub fn check(operations: &[Operation], watches: &[Watched]) -> Vec<String> {
    let mut violations = Vec::new();
    if watches.is_empty() {
        return vec!["no watch".into()];
    }
    let Merged {
        order,
        inferred,
        gaps,
        timeline,
    } = watched::merge(watches, &mut violations);
    let by_value: HashMap<&str, &Change> = order
        .iter()
        .filter_map(|c| c.value.as_deref().map(|v| (v, c)))
        .collect();
    // Whether the version of `key` written at `revision`, where no watch saw, was replaced or
    // deleted there: by the gap's end the key holds a later version or none.
    let replaced_unseen = |key: &str, revision: u64| {
        gaps.end_of(revision).is_some_and(|end| {
            timeline
                .state_at(end)
                .get(key)
                .is_none_or(|(rv, _)| *rv > revision)
        })
    };
    // Writes: where each landed, if it did.
    let mut landed: Vec<(u64, &Operation)> = Vec::new();
    for op in operations {
        match (&op.request, &op.outcome) {
            (Request::Create { key, value } | Request::Update { key, value, .. }, outcome) => {
                let seen = by_value.get(value.as_str());
                match (outcome, seen) {
                    (Outcome::Written(rv), Some(c)) if c.revision == *rv && &c.key == key => {
                        landed.push((*rv, op));
                    }
                    // Written where no watch saw, and replaced there before any relist.
                    (Outcome::Written(rv), None) if replaced_unseen(key, *rv) =>
                    {
                        landed.push((*rv, op));
                    }
                    (Outcome::Written(rv), _) => violations.push(format!(
                        "acknowledged write of {value} to {key} at {rv} is not in the watch at that revision"
                    )),
                    (Outcome::Refused, Some(c)) => violations.push(format!(
                        "refused write of {value} to {key} is in the watch at {}",
                        c.revision
                    )),
                    (Outcome::Unknown, Some(c)) => landed.push((c.revision, op)),
                    _ => {}
                }
                // What came just before is unknown where a gap lies between.
                let unseen_before = |c: &Change| {
                    let before = timeline.previous(key, c.revision).map_or(0, |(rv, _)| rv);
                    gaps.meets(before + 1, c.revision)
                };
                if let (Request::Update { expected, .. }, Some(c)) = (&op.request, seen) {
                    let before = timeline.previous(key, c.revision);
                    if !unseen_before(c)
                        && (before.map(|(rv, _)| rv) != Some(*expected)
                            || before.is_some_and(|(_, v)| v.is_none()))
                    {
                        violations.push(format!(
                            "update of {key} expecting {expected} landed at {} after {before:?}",
                            c.revision
                        ));
                    }
                }
                if let (Request::Create { .. }, Some(c)) = (&op.request, seen) {
                    if let (Some((rv, Some(_))), false) =
                        (timeline.previous(key, c.revision), unseen_before(c))
                    {
                        violations.push(format!(
                            "create of {key} at {} over the live version {rv}",
                            c.revision
                        ));
                    }
                }
            }
            (Request::Delete { key, expected }, Outcome::Deleted) => {
                match timeline.next(key, *expected) {
                    Some((rv, None)) if inferred.contains(&(key.clone(), rv)) => {}
                    Some((rv, None)) => landed.push((rv, op)),
                    other
                        if gaps.meets(
                            expected + 1,
                            other.map_or(u64::MAX, |(rv, _)| rv.saturating_add(1)),
                        ) => {}
                    other => violations.push(format!(
                        "acknowledged delete of {key} at {expected} is followed by {other:?}"
                    )),
                }
            }
            _ => {}
        }
    }
    // Real time: completed before began means an earlier revision.
    landed.sort_by_key(|(rv, _)| *rv);
    for (i, (rv, op)) in landed.iter().enumerate() {
        if op.outcome == Outcome::Unknown {
            continue;
        }
        if let Some((later_rv, later)) = landed[..i]
            .iter()
            .find(|(_, earlier)| earlier.invoked > op.completed)
        {
            violations.push(format!(
                "write at {rv} completed at {}µs, but the write at {later_rv} began later, at {}µs",
                op.completed, later.invoked
            ));
        }
    }
    // Reads.
    let mut seen_by_client: HashMap<usize, u64> = HashMap::new();
    let mut by_completion: Vec<&Operation> = operations.iter().collect();
    by_completion.sort_by_key(|op| op.completed);
    for op in &by_completion {
        let floor = landed
            .iter()
            .filter(|(_, w)| w.outcome != Outcome::Unknown && w.completed < op.invoked)
            .map(|(rv, _)| *rv)
            .max()
            .unwrap_or(0);
        let ceiling = landed
            .iter()
            .filter(|(_, w)| w.invoked > op.completed)
            .map(|(rv, _)| *rv)
            .min()
            .unwrap_or(u64::MAX);
        let client_floor = seen_by_client.get(&op.client).copied().unwrap_or(0);
        match (&op.request, &op.outcome) {
            (Request::Get { key, consistent }, Outcome::Got(found)) => {
                let low = if *consistent { floor } else { client_floor };
                // Near a gap the versions' extents are not known: only monotonicity counts.
                let near_gap = gaps.meets(low, ceiling)
                    || found.as_ref().is_some_and(|(rv, _)| {
                        gaps.contains(*rv) && timeline.version(key, *rv).is_none()
                    });
                if near_gap {
                    if !consistent {
                        let observed = found.as_ref().map_or(low, |(rv, _)| *rv);
                        let entry = seen_by_client.entry(op.client).or_default();
                        *entry = (*entry).max(observed);
                    }
                    continue;
                }
                let (from, until) = match found {
                    Some((rv, value)) => match timeline.version(key, *rv) {
                        Some((v, until)) if v.as_deref() == Some(value.as_str()) => (*rv, until),
                        other => {
                            violations.push(format!(
                                "GET {key} saw {value} at {rv}, which the watch has as {other:?}"
                            ));
                            continue;
                        }
                    },
                    None => match timeline.absent_around(key, low, ceiling) {
                        Some(interval) => interval,
                        None => {
                            violations.push(format!(
                                "GET {key} (consistent: {consistent}) found nothing, but {key} existed throughout [{low}, {ceiling})"
                            ));
                            continue;
                        }
                    },
                };
                if until <= low || from >= ceiling {
                    violations.push(format!(
                        "GET {key} (consistent: {consistent}, client {}) saw the state of [{from}, {until}), outside [{low}, {ceiling})",
                        op.client
                    ));
                }
                // What the watch cache showed the client; a consistent GET may be read from
                // the store, ahead of the cache (as in Kubernetes), so it does not count.
                if !consistent {
                    let observed = found.as_ref().map_or(from, |(rv, _)| *rv);
                    let entry = seen_by_client.entry(op.client).or_default();
                    *entry = (*entry).max(observed);
                }
            }
            (Request::List, Outcome::Listed(at, items)) => {
                if *at < floor || *at >= ceiling {
                    violations.push(format!("LIST at {at} outside [{floor}, {ceiling})"));
                }
                let expected = timeline.state_at(*at);
                if &expected != items && !gaps.contains(*at) {
                    violations.push(format!(
                        "LIST at {at} returned {items:?}, the watch has {expected:?}"
                    ));
                }
                let entry = seen_by_client.entry(op.client).or_default();
                *entry = (*entry).max(*at);
            }
            _ => {}
        }
    }
    violations
}

#[cfg(test)]
mod tests;
