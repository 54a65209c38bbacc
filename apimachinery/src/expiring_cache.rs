//! Answers remembered for a while — verified tokens' users, webhook authorizers' decisions —
//! each until its own deadline, the whole cache emptied when it is full (entries are cheap to
//! make again; bounding memory matters more than keeping the oldest).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A bounded cache of values that expire.
#[derive(Debug)]
pub struct ExpiringCache<K, V> {
    entries: Mutex<HashMap<K, (V, Instant)>>,
    capacity: usize,
}

impl<K: Eq + Hash, V: Clone> ExpiringCache<K, V> {
    /// An empty cache holding at most `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: Mutex::default(),
            capacity,
        }
    }

    /// The value of `key`, unless it expired.
    pub fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let (value, until) = entries.get(key)?;
        (Instant::now() < *until).then(|| value.clone())
    }

    /// Remembers `value` for `key` during `ttl`.
    pub fn insert(&self, key: K, value: V, ttl: Duration) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= self.capacity {
            entries.clear();
        }
        entries.insert(key, (value, Instant::now() + ttl));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_expire_and_a_full_cache_starts_afresh() {
        let cache = ExpiringCache::new(2);
        cache.insert("a", 1, Duration::from_secs(60));
        cache.insert("gone", 2, Duration::ZERO);
        assert_eq!(cache.get(&"a"), Some(1));
        assert_eq!(cache.get(&"gone"), None);
        cache.insert("c", 3, Duration::from_secs(60));
        assert_eq!(cache.get(&"a"), None, "emptied when full");
        assert_eq!(cache.get(&"c"), Some(3));
    }
}
