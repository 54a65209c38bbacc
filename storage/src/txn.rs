//! Compare-and-swap primitives and the update and delete loops built on them.
//!
//! Both stores offer the same three primitives (read a key's latest state; write or delete it
//! if its mod_revision is what the caller saw). `guaranteed_update` and `conditional_delete`
//! are written once here on top of them, so both stores share one set of retry rules.

use async_trait::async_trait;
use serde_json::Value;

use super::error::{Result, StorageError};
use super::request::{ConditionalDelete, GuaranteedUpdate};
use super::versioner::{
    decode_from_storage, encode_for_storage, object_resource_version, set_object_resource_version,
};

/// A key's stored bytes and the revisions that describe them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawValue {
    /// The stored bytes (JSON, without a resourceVersion).
    pub data: Vec<u8>,
    /// The revision of the key's last write.
    pub mod_revision: u64,
    /// Stored under an encryption key or provider that is no longer the one writes use: an
    /// update writes it again even when nothing changed, so rotation can rewrite every object.
    pub stale: bool,
}

/// What a compare-and-swap did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CasOutcome {
    /// The write landed at this revision.
    Committed(u64),
    /// The key's mod_revision was not the expected one; this is its current state.
    Stale(Option<RawValue>),
}

/// The primitives a store offers the shared loops. Keys are full keys (prefix included).
#[async_trait]
pub trait CasStore: Send + Sync {
    /// Reads the latest state of `full_key`.
    async fn read_latest(&self, full_key: &str) -> Result<Option<RawValue>>;

    /// Writes `data` at `full_key` if its mod_revision is `expected` (0: the key must not exist).
    async fn put_if(&self, full_key: &str, data: Vec<u8>, expected: u64) -> Result<CasOutcome>;

    /// Deletes `full_key` if its mod_revision is `expected`.
    async fn delete_if(&self, full_key: &str, expected: u64) -> Result<CasOutcome>;
}

/// An object as the loops track it: decoded, its bytes, and its mod_revision.
struct State {
    object: Value,
    data: Vec<u8>,
    mod_revision: u64,
    stale: bool,
}

impl State {
    fn from_raw(full_key: &str, raw: RawValue) -> Result<Self> {
        let object = decode_from_storage(full_key, &raw.data, raw.mod_revision)?;
        Ok(Self {
            object,
            data: raw.data,
            mod_revision: raw.mod_revision,
            stale: raw.stale,
        })
    }

    /// Builds a state from a cached object; `None` when the object lacks a usable revision.
    fn from_cached(full_key: &str, mut cached: Value) -> Option<Self> {
        let mod_revision = object_resource_version(&cached).ok().flatten()?;
        let data = encode_for_storage(full_key, &mut cached).ok()?;
        Some(Self {
            object: cached,
            data,
            mod_revision,
            stale: false,
        })
    }
}

/// Decodes a key's raw state (`None`: the key does not exist).
fn decode_state(full_key: &str, raw: Option<RawValue>) -> Result<Option<State>> {
    raw.map(|raw| State::from_raw(full_key, raw)).transpose()
}

async fn read_state(store: &dyn CasStore, full_key: &str) -> Result<Option<State>> {
    decode_state(full_key, store.read_latest(full_key).await?)
}

/// The state a loop starts from: the cached copy when it has a usable revision (not known to be
/// current, hence `false`), otherwise a fresh read (`true`).
async fn first_state(
    store: &dyn CasStore,
    full_key: &str,
    cached_existing: Option<Value>,
) -> Result<(Option<State>, bool)> {
    match cached_existing.and_then(|c| State::from_cached(full_key, c)) {
        Some(hint) => Ok((Some(hint), false)),
        None => Ok((read_state(store, full_key).await?, true)),
    }
}

/// Creates `full_key` from `obj`.
///
/// # Errors
/// `InvalidObject` when `obj` carries a resourceVersion; `AlreadyExists`.
pub async fn create(store: &dyn CasStore, full_key: &str, mut obj: Value) -> Result<Value> {
    if object_resource_version(&obj)
        .map_err(|e| StorageError::invalid_object(full_key, e.to_string()))?
        .is_some()
    {
        return Err(StorageError::invalid_object(
            full_key,
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let data = encode_for_storage(full_key, &mut obj)?;
    match store.put_if(full_key, data, 0).await? {
        CasOutcome::Committed(rev) => Ok(committed(obj, rev)),
        CasOutcome::Stale(_) => Err(StorageError::already_exists(full_key)),
    }
}

/// The shared `guaranteed_update` loop (see `Storage::guaranteed_update`).
pub async fn guaranteed_update(
    store: &dyn CasStore,
    full_key: &str,
    mut request: GuaranteedUpdate<'_>,
) -> Result<Value> {
    let cached = request.cached_existing.take();
    let (mut state, mut is_current) = first_state(store, full_key, cached).await?;
    loop {
        // A stale hint may be why anything below fails: re-read once before answering.
        // When the re-read shows the hint was current after all, the callback would see the
        // same object again: answer now instead of calling it twice.
        macro_rules! retry_if_stale {
            ($err:expr) => {{
                if !is_current {
                    let hinted = state.as_ref().map(|s| s.mod_revision);
                    state = read_state(store, full_key).await?;
                    is_current = true;
                    if state.as_ref().map(|s| s.mod_revision) != hinted {
                        continue;
                    }
                }
                return Err($err);
            }};
        }
        let current = match &state {
            Some(s) => {
                if let Err(e) = request.preconditions.check(full_key, &s.object) {
                    retry_if_stale!(e);
                }
                Some(s.object.clone())
            }
            None if request.ignore_not_found => None,
            None => retry_if_stale!(StorageError::not_found(full_key)),
        };
        let mut updated = match (request.try_update)(current).await {
            Ok(v) => v,
            Err(e) => retry_if_stale!(StorageError::Aborted(e)),
        };
        let data = encode_for_storage(full_key, &mut updated)?;
        if let Some(s) = &state {
            if s.data == data && !s.stale {
                if !is_current {
                    state = read_state(store, full_key).await?;
                    is_current = true;
                    continue;
                }
                return Ok(s.object.clone());
            }
        }
        let expected = state.as_ref().map_or(0, |s| s.mod_revision);
        match store.put_if(full_key, data, expected).await? {
            CasOutcome::Committed(rev) => return Ok(committed(updated, rev)),
            CasOutcome::Stale(fresh) => {
                state = decode_state(full_key, fresh)?;
                is_current = true;
            }
        }
    }
}

/// The object a write committed, stamped with the revision of that write: the object itself, as
/// its stored bytes decode to the same tree (no need to parse them back).
fn committed(mut obj: Value, revision: u64) -> Value {
    set_object_resource_version(&mut obj, revision);
    obj
}

/// The shared delete loop (see `Storage::delete`).
pub async fn conditional_delete(
    store: &dyn CasStore,
    full_key: &str,
    mut request: ConditionalDelete<'_>,
) -> Result<Value> {
    let cached = request.cached_existing.take();
    let (mut state, mut is_current) = first_state(store, full_key, cached).await?;
    loop {
        let checked = match &state {
            None => Err(StorageError::not_found(full_key)),
            Some(s) => match request.preconditions.check(full_key, &s.object) {
                Err(e) => Err(e),
                Ok(()) => (request.validate)(s.object.clone())
                    .await
                    .map_err(StorageError::Aborted),
            },
        };
        if let Err(e) = checked {
            if !is_current {
                state = read_state(store, full_key).await?;
                is_current = true;
                continue;
            }
            return Err(e);
        }
        let s = state.as_ref().expect("checked above");
        match store.delete_if(full_key, s.mod_revision).await? {
            CasOutcome::Committed(rev) => return decode_from_storage(full_key, &s.data, rev),
            CasOutcome::Stale(fresh) => {
                state = decode_state(full_key, fresh)?;
                is_current = true;
            }
        }
    }
}
