//! Storage keys: validation and joining with a store's prefix.
//!
//! Callers name objects by keys such as `/example.com/widgets/default/w1`; each store joins them
//! under its own prefix (`/registry` by default). A key that is empty or climbs out of the prefix
//! with `.` or `..` segments is refused before it reaches the store.

use super::error::{Result, StorageError};

/// The keys a read or a watch covers: exactly one key, or every key under a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyScope {
    /// Exactly this key.
    Key(String),
    /// Every key starting with this prefix.
    Prefix(String),
}

impl KeyScope {
    /// `key` alone, or (`recursive`) every key under it.
    pub(crate) fn of(key: String, recursive: bool) -> Self {
        if recursive {
            Self::Prefix(recursive_prefix(&key))
        } else {
            Self::Key(key)
        }
    }

    /// True when `key` is covered.
    pub(crate) fn contains(&self, key: &str) -> bool {
        match self {
            Self::Key(k) => k == key,
            Self::Prefix(p) => key.starts_with(p.as_str()),
        }
    }

    /// The key, or the prefix.
    pub(crate) fn base(&self) -> &str {
        match self {
            Self::Key(k) | Self::Prefix(k) => k,
        }
    }

    /// The first key of the range at or after `start` (when given).
    pub(crate) fn start<'a>(&'a self, start: Option<&'a str>) -> &'a str {
        match start {
            Some(s) if s > self.base() => s,
            _ => self.base(),
        }
    }
}

/// Checks a caller's key and joins it under `prefix` (which must end in `/`).
///
/// # Errors
/// `BadRequest` for an empty key, `/`, or any `.`/`..` path segment.
///
/// # Examples
/// ```
/// use strategy_host_storage::key::prepare_key;
/// assert_eq!(prepare_key("/registry/", "/pods/ns/a").unwrap(), "/registry/pods/ns/a");
/// assert!(prepare_key("/registry/", "/pods/../../etc").is_err());
/// ```
pub fn prepare_key(prefix: &str, key: &str) -> Result<String> {
    if key.is_empty() || key == "/" {
        return Err(StorageError::BadRequest(format!("empty key: {key:?}")));
    }
    if key
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return Err(StorageError::BadRequest(format!("invalid key: {key:?}")));
    }
    let rest = key.strip_prefix('/').unwrap_or(key);
    Ok(format!("{prefix}{rest}"))
}

/// Normalizes a configured prefix so it starts and ends with `/`.
pub fn normalize_prefix(prefix: &str) -> String {
    let trimmed = prefix.trim_matches('/');
    if trimmed.is_empty() {
        "/".to_string()
    } else {
        format!("/{trimmed}/")
    }
}

/// The range prefix for a recursive operation on `full_key`: the key with a trailing `/`, so that
/// `/pods/a` never matches `/pods/ab`.
pub fn recursive_prefix(full_key: &str) -> String {
    if full_key.ends_with('/') {
        full_key.to_string()
    } else {
        format!("{full_key}/")
    }
}

/// The smallest key greater than every key that starts with `prefix` (etcd's range end).
pub fn prefix_range_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// The resource a key belongs to, as Kubernetes labels it: `plural.group` (`plural` for core),
/// from a key `/group/plural/...` (`/plural/...` for core resources).
pub fn resource_of(key: &str) -> String {
    let mut parts = key.trim_start_matches('/').split('/');
    match (parts.next(), parts.next()) {
        (Some(first), Some(second)) if first.contains('.') => format!("{second}.{first}"),
        (Some(first), _) => first.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_keys_that_escape_the_prefix() {
        for bad in ["", "/", ".", "..", "/a/..", "../a", "/a/./b", "a/."] {
            assert!(prepare_key("/registry/", bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(prepare_key("/registry/", "a/b").unwrap(), "/registry/a/b");
    }

    #[test]
    fn prefixes_are_normalized_and_ranged() {
        assert_eq!(normalize_prefix("registry"), "/registry/");
        assert_eq!(normalize_prefix("/registry/"), "/registry/");
        assert_eq!(recursive_prefix("/r/pods"), "/r/pods/");
        assert_eq!(prefix_range_end("/r/"), b"/r0".to_vec());
    }
}
