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

use std::collections::{BTreeMap, HashMap};

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
    Listed(u64, BTreeMap<String, (u64, String)>),
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
pub fn check(operations: &[Operation], watches: &[Vec<Change>]) -> Vec<String> {
    let mut violations = Vec::new();
    let Some(order) = watches.first() else {
        return vec!["no watch".into()];
    };
    for (i, watch) in watches.iter().enumerate() {
        for pair in watch.windows(2) {
            if pair[1].revision <= pair[0].revision {
                violations.push(format!(
                    "watch {i}: revision {} after {}",
                    pair[1].revision, pair[0].revision
                ));
            }
        }
        if watch != order {
            let at = watch.iter().zip(order).position(|(a, b)| a != b);
            violations.push(format!(
                "watch {i} differs from watch 0 ({} vs {} events; first difference at {at:?})",
                watch.len(),
                order.len()
            ));
        }
    }
    let timeline = Timeline::new(order);
    let by_value: HashMap<&str, &Change> = order
        .iter()
        .filter_map(|c| c.value.as_deref().map(|v| (v, c)))
        .collect();
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
                if let (Request::Update { expected, .. }, Some(c)) = (&op.request, seen) {
                    let before = timeline.previous(key, c.revision);
                    if before.map(|(rv, _)| rv) != Some(*expected)
                        || before.is_some_and(|(_, v)| v.is_none())
                    {
                        violations.push(format!(
                            "update of {key} expecting {expected} landed at {} after {before:?}",
                            c.revision
                        ));
                    }
                }
                if let (Request::Create { .. }, Some(c)) = (&op.request, seen) {
                    if let Some((rv, Some(_))) = timeline.previous(key, c.revision) {
                        violations.push(format!(
                            "create of {key} at {} over the live version {rv}",
                            c.revision
                        ));
                    }
                }
            }
            (Request::Delete { key, expected }, Outcome::Deleted) => {
                match timeline.next(key, *expected) {
                    Some((rv, None)) => landed.push((rv, op)),
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
                if &expected != items {
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

/// Each key's versions in revision order, from a watch.
struct Timeline {
    keys: HashMap<String, Vec<(u64, Option<String>)>>,
}

impl Timeline {
    fn new(changes: &[Change]) -> Self {
        let mut keys: HashMap<String, Vec<(u64, Option<String>)>> = HashMap::new();
        for c in changes {
            keys.entry(c.key.clone())
                .or_default()
                .push((c.revision, c.value.clone()));
        }
        Self { keys }
    }

    fn versions(&self, key: &str) -> &[(u64, Option<String>)] {
        self.keys.get(key).map_or(&[], Vec::as_slice)
    }

    /// The change of `key` just before `revision`.
    fn previous(&self, key: &str, revision: u64) -> Option<(u64, Option<&str>)> {
        self.versions(key)
            .iter()
            .rev()
            .find(|(rv, _)| *rv < revision)
            .map(|(rv, v)| (*rv, v.as_deref()))
    }

    /// The change of `key` just after `revision`.
    fn next(&self, key: &str, revision: u64) -> Option<(u64, Option<&str>)> {
        self.versions(key)
            .iter()
            .find(|(rv, _)| *rv > revision)
            .map(|(rv, v)| (*rv, v.as_deref()))
    }

    /// The version of `key` written at `revision` and the revision it lasted until.
    fn version(&self, key: &str, revision: u64) -> Option<(Option<String>, u64)> {
        let versions = self.versions(key);
        let i = versions.iter().position(|(rv, _)| *rv == revision)?;
        let until = versions.get(i + 1).map_or(u64::MAX, |(rv, _)| *rv);
        Some((versions[i].1.clone(), until))
    }

    /// An interval in which `key` did not exist that meets `[low, high)`.
    fn absent_around(&self, key: &str, low: u64, high: u64) -> Option<(u64, u64)> {
        let versions = self.versions(key);
        let mut start = 0;
        let mut absent = true;
        for (rv, value) in versions {
            if absent && *rv > low && start < high {
                return Some((start, *rv));
            }
            absent = value.is_none();
            start = *rv;
        }
        absent
            .then_some((start, u64::MAX))
            .filter(|(s, _)| *s < high)
    }

    /// Every live key as of `revision`.
    fn state_at(&self, revision: u64) -> BTreeMap<String, (u64, String)> {
        self.keys
            .iter()
            .filter_map(|(key, versions)| {
                let (rv, value) = versions.iter().rev().find(|(rv, _)| *rv <= revision)?;
                Some((key.clone(), (*rv, value.clone()?)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(
        client: usize,
        request: Request,
        invoked: Micros,
        completed: Micros,
        outcome: Outcome,
    ) -> Operation {
        Operation {
            client,
            request,
            invoked,
            completed,
            outcome,
        }
    }

    fn create(key: &str, value: &str) -> Request {
        Request::Create {
            key: key.into(),
            value: value.into(),
        }
    }

    fn change(revision: u64, key: &str, value: Option<&str>) -> Change {
        Change {
            revision,
            key: key.into(),
            value: value.map(Into::into),
        }
    }

    fn get(key: &str) -> Request {
        Request::Get {
            key: key.into(),
            consistent: true,
        }
    }

    #[test]
    fn a_linearizable_history_passes() {
        let watch = vec![
            change(2, "a", Some("a1")),
            change(3, "a", Some("a2")),
            change(4, "a", None),
        ];
        let ops = vec![
            op(0, create("a", "a1"), 0, 10, Outcome::Written(2)),
            op(1, get("a"), 11, 12, Outcome::Got(Some((2, "a1".into())))),
            op(
                0,
                Request::Update {
                    key: "a".into(),
                    value: "a2".into(),
                    expected: 2,
                },
                13,
                20,
                Outcome::Written(3),
            ),
            op(
                1,
                Request::Delete {
                    key: "a".into(),
                    expected: 3,
                },
                21,
                30,
                Outcome::Deleted,
            ),
            op(0, get("a"), 31, 32, Outcome::Got(None)),
            op(
                1,
                Request::List,
                33,
                34,
                Outcome::Listed(4, BTreeMap::new()),
            ),
        ];
        assert_eq!(check(&ops, &[watch.clone(), watch]), Vec::<String>::new());
    }

    #[test]
    fn stale_reads_lost_writes_and_diverging_watches_are_caught() {
        let watch = vec![change(2, "a", Some("a1")), change(3, "a", Some("a2"))];
        // A consistent read that began after a2 was acknowledged but saw a1.
        let stale = vec![
            op(0, create("a", "a1"), 0, 10, Outcome::Written(2)),
            op(
                0,
                Request::Update {
                    key: "a".into(),
                    value: "a2".into(),
                    expected: 2,
                },
                11,
                20,
                Outcome::Written(3),
            ),
            op(1, get("a"), 21, 22, Outcome::Got(Some((2, "a1".into())))),
        ];
        assert_eq!(check(&stale, std::slice::from_ref(&watch)).len(), 1);
        // An acknowledged write the watch never delivered.
        let lost = vec![op(0, create("b", "b1"), 0, 10, Outcome::Written(5))];
        assert_eq!(check(&lost, std::slice::from_ref(&watch)).len(), 1);
        // A refused write that happened after all.
        let refused = vec![op(0, create("a", "a1"), 0, 10, Outcome::Refused)];
        assert_eq!(check(&refused, std::slice::from_ref(&watch)).len(), 1);
        // Two watchers that disagree.
        let other = vec![change(2, "a", Some("a1"))];
        assert!(!check(&[], &[watch.clone(), other]).is_empty());
        // Revisions against real time: the second write completed before the first began.
        let backwards = vec![
            op(0, create("a", "a1"), 30, 40, Outcome::Written(2)),
            op(
                1,
                Request::Update {
                    key: "a".into(),
                    value: "a2".into(),
                    expected: 2,
                },
                0,
                10,
                Outcome::Written(3),
            ),
        ];
        assert!(!check(&backwards, &[watch]).is_empty());
    }
}
