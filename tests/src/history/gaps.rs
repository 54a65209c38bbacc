//! The stretches of revisions no watcher saw the changes of: each watcher that relisted skipped
//! from the last revision it was delivered to the revision of its list, and what every watcher
//! skipped is known only through their lists.

use super::Watched;

/// Revision intervals `(after, until]` that no watch delivered the changes of.
#[derive(Debug, Default)]
pub(super) struct Gaps(Vec<(u64, u64)>);

impl Gaps {
    /// The intervals every one of `watches` skipped.
    pub(super) fn of(watches: &[Watched]) -> Self {
        let mut common: Option<Vec<(u64, u64)>> = None;
        for watched in watches {
            let own = watched.skipped();
            common = Some(match common {
                None => own,
                Some(common) => common
                    .iter()
                    .flat_map(|a| own.iter().map(move |b| (a.0.max(b.0), a.1.min(b.1))))
                    .filter(|(after, until)| after < until)
                    .collect(),
            });
        }
        Self(common.unwrap_or_default())
    }

    /// Whether `revision` lies in a gap.
    pub(super) fn contains(&self, revision: u64) -> bool {
        self.end_of(revision).is_some()
    }

    /// The end of the gap `revision` lies in.
    pub(super) fn end_of(&self, revision: u64) -> Option<u64> {
        self.0
            .iter()
            .find(|&&(after, until)| after < revision && revision <= until)
            .map(|&(_, until)| until)
    }

    /// Whether a gap meets the revisions `[low, high)`.
    pub(super) fn meets(&self, low: u64, high: u64) -> bool {
        self.0
            .iter()
            .any(|&(after, until)| after.saturating_add(1) < high && low <= until)
    }

    /// The end of the last gap that ends in `(after, until]`.
    pub(super) fn last_end_within(&self, after: u64, until: u64) -> Option<u64> {
        self.0
            .iter()
            .map(|&(_, end)| end)
            .filter(|&end| after < end && end <= until)
            .max()
    }
}

impl Watched {
    /// The intervals this watcher skipped.
    fn skipped(&self) -> Vec<(u64, u64)> {
        self.relists.iter().map(|r| (r.after, r.revision)).collect()
    }
}
