//! Each key's versions in revision order, as the watches (and relists) showed them.

use std::collections::{BTreeMap, HashMap};

use super::Change;

/// Each key's versions in revision order, from a watch.
pub(super) struct Timeline {
    keys: HashMap<String, Vec<(u64, Option<String>)>>,
}

impl Timeline {
    pub(super) fn new(changes: &[Change]) -> Self {
        let mut keys: HashMap<String, Vec<(u64, Option<String>)>> = HashMap::new();
        for c in changes {
            keys.entry(c.key.clone())
                .or_default()
                .push((c.revision, c.value.clone()));
        }
        Self { keys }
    }

    pub(super) fn versions(&self, key: &str) -> &[(u64, Option<String>)] {
        self.keys.get(key).map_or(&[], Vec::as_slice)
    }

    /// The change of `key` just before `revision`.
    pub(super) fn previous(&self, key: &str, revision: u64) -> Option<(u64, Option<&str>)> {
        self.versions(key)
            .iter()
            .rev()
            .find(|(rv, _)| *rv < revision)
            .map(|(rv, v)| (*rv, v.as_deref()))
    }

    /// The change of `key` just after `revision`.
    pub(super) fn next(&self, key: &str, revision: u64) -> Option<(u64, Option<&str>)> {
        self.versions(key)
            .iter()
            .find(|(rv, _)| *rv > revision)
            .map(|(rv, v)| (*rv, v.as_deref()))
    }

    /// The version of `key` written at `revision` and the revision it lasted until.
    pub(super) fn version(&self, key: &str, revision: u64) -> Option<(Option<String>, u64)> {
        let versions = self.versions(key);
        let i = versions.iter().position(|(rv, _)| *rv == revision)?;
        let until = versions.get(i + 1).map_or(u64::MAX, |(rv, _)| *rv);
        Some((versions[i].1.clone(), until))
    }

    /// An interval in which `key` did not exist that meets `[low, high)`.
    pub(super) fn absent_around(&self, key: &str, low: u64, high: u64) -> Option<(u64, u64)> {
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
    pub(super) fn state_at(&self, revision: u64) -> BTreeMap<String, (u64, String)> {
        self.keys
            .iter()
            .filter_map(|(key, versions)| {
                let (rv, value) = versions.iter().rev().find(|(rv, _)| *rv <= revision)?;
                Some((key.clone(), (*rv, value.clone()?)))
            })
            .collect()
    }
}
