//! What the watchers saw, merged into one history: the changes their watches delivered, and
//! what their relists showed of the stretches they skipped.

use std::collections::{BTreeMap, HashSet};

use super::gaps::Gaps;
use super::timeline::Timeline;
use super::{Change, Listing};

/// A watcher's relist: its watch could not resume after `after` (410 Gone: a restarted
/// server's watch cache starts later), so it listed the state at `revision` and watched on from
/// there, never seeing the changes in between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relist {
    /// The last revision delivered before.
    pub after: u64,
    /// The list's resourceVersion.
    pub revision: u64,
    /// The list: name → (resourceVersion, value).
    pub state: Listing,
}

/// What one watcher saw, from a watch that began with nothing under it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Watched {
    /// The changes delivered, in order.
    pub changes: Vec<Change>,
    /// Where it relisted instead.
    pub relists: Vec<Relist>,
}

impl From<Vec<Change>> for Watched {
    fn from(changes: Vec<Change>) -> Self {
        Self {
            changes,
            relists: Vec::new(),
        }
    }
}

/// One history from every watcher.
pub(super) struct Merged {
    /// Every change in revision order: delivered by a watch, shown by a relist (a version
    /// written in a gap), or inferred from one (a deletion in a gap, placed at its end).
    pub order: Vec<Change>,
    /// The inferred deletions, (key, revision): their true revision is unknown.
    pub inferred: HashSet<(String, u64)>,
    /// What no watcher saw.
    pub gaps: Gaps,
    /// `order`, key by key.
    pub timeline: Timeline,
}

/// Merges `watches`, reporting watchers that disagree, missed or repeated a change, or relisted
/// a state the others' changes contradict.
pub(super) fn merge(watches: &[Watched], violations: &mut Vec<String>) -> Merged {
    let gaps = Gaps::of(watches);
    let mut delivered: BTreeMap<u64, Change> = BTreeMap::new();
    for (i, watched) in watches.iter().enumerate() {
        for pair in watched.changes.windows(2) {
            if pair[1].revision <= pair[0].revision {
                violations.push(format!(
                    "watch {i}: revision {} after {}",
                    pair[1].revision, pair[0].revision
                ));
            }
        }
        for change in &watched.changes {
            match delivered.get(&change.revision) {
                Some(other) if other != change => violations.push(format!(
                    "watch {i} has {change:?} where another has {other:?}"
                )),
                Some(_) => {}
                None => {
                    delivered.insert(change.revision, change.clone());
                }
            }
        }
    }
    // Each watcher saw every change outside the stretches it relisted over.
    for (i, watched) in watches.iter().enumerate() {
        let skipped = Gaps::of(std::slice::from_ref(watched));
        let expected: Vec<&Change> = delivered
            .values()
            .filter(|c| !skipped.contains(c.revision))
            .collect();
        if !watched.changes.iter().eq(expected.iter().copied()) {
            let at = watched
                .changes
                .iter()
                .zip(&expected)
                .position(|(a, b)| a != *b);
            violations.push(format!(
                "watch {i} differs from what the watches delivered ({} vs {} events; first difference at {at:?})",
                watched.changes.len(),
                expected.len()
            ));
        }
    }
    // What the relists showed of the gaps.
    let relists: Vec<&Relist> = watches.iter().flat_map(|w| &w.relists).collect();
    let mut order: Vec<Change> = delivered.into_values().collect();
    let mut known: HashSet<u64> = order.iter().map(|c| c.revision).collect();
    for relist in &relists {
        for (key, (rv, value)) in &relist.state {
            if known.contains(rv) {
                continue;
            }
            if gaps.contains(*rv) {
                known.insert(*rv);
                order.push(Change {
                    revision: *rv,
                    key: key.clone(),
                    value: Some(value.clone()),
                });
            } else {
                violations.push(format!(
                    "the relist at {} shows {key} at {rv}, which no watch delivered",
                    relist.revision
                ));
            }
        }
    }
    order.sort_by_key(|c| c.revision);
    let timeline = Timeline::new(&order);
    let mut inferred = HashSet::new();
    for relist in &relists {
        let expected = timeline.state_at(relist.revision);
        for (key, version) in &expected {
            match relist.state.get(key) {
                Some(shown) if shown == version => {}
                Some(shown) => violations.push(format!(
                    "the relist at {} shows {key} at {shown:?}, the watches have {version:?}",
                    relist.revision
                )),
                // Deleted where no watch saw it: by the end of that gap.
                None => match gaps.last_end_within(version.0, relist.revision) {
                    Some(end) => {
                        inferred.insert((key.clone(), end));
                    }
                    None => violations.push(format!(
                        "the relist at {} lacks {key}, live since {}",
                        relist.revision, version.0
                    )),
                },
            }
        }
        for (key, shown) in &relist.state {
            if !expected.contains_key(key) {
                violations.push(format!(
                    "the relist at {} shows {key} at {shown:?}, deleted in the watches",
                    relist.revision
                ));
            }
        }
    }
    order.extend(inferred.iter().map(|(key, revision)| Change {
        revision: *revision,
        key: key.clone(),
        value: None,
    }));
    order.sort_by_key(|c| c.revision);
    let timeline = Timeline::new(&order);
    Merged {
        order,
        inferred,
        gaps,
        timeline,
    }
}
