//! The versioner: moves a storage revision in and out of an object's `metadata.resourceVersion`.
//!
//! Objects are stored without a resourceVersion; the store writes the revision of the last write
//! (etcd's mod_revision) into every object it hands back.

use serde_json::Value;

use super::error::{Result, StorageError};

/// Parses a resourceVersion as sent by a client: `""` means "unset" (`None`), anything else must be
/// a non-negative decimal integer.
///
/// # Errors
/// `BadRequest` when the text is not a number.
pub fn parse_resource_version(rv: &str) -> Result<Option<u64>> {
    if rv.is_empty() {
        return Ok(None);
    }
    rv.parse::<u64>()
        .map(Some)
        .map_err(|_| StorageError::BadRequest(format!("invalid resource version: {rv:?}")))
}

/// Reads `metadata.resourceVersion` of an object; `None` when absent or empty.
///
/// # Errors
/// `BadRequest` when it is present but not a number.
pub fn object_resource_version(obj: &Value) -> Result<Option<u64>> {
    match obj.pointer("/metadata/resourceVersion") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => parse_resource_version(s),
        Some(other) => Err(StorageError::BadRequest(format!(
            "invalid resource version: {other}"
        ))),
    }
}

/// Writes `revision` into `metadata.resourceVersion`, creating `metadata` when missing.
pub fn set_object_resource_version(obj: &mut Value, revision: u64) {
    if let Some(map) = obj.as_object_mut() {
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                "resourceVersion".to_string(),
                Value::String(revision.to_string()),
            );
        }
    }
}

/// Removes `metadata.resourceVersion` so the stored bytes never carry a stale revision.
pub fn clear_object_resource_version(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
}

/// Reads `metadata.uid`, if any.
pub fn object_uid(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/uid").and_then(Value::as_str)
}

/// Encodes an object for storage: compact JSON without its resourceVersion. The revision is
/// taken out for the encoding and put back (metadata is an ordered map, so nothing moves), which
/// spares a copy of the whole tree per write.
///
/// # Errors
/// `InvalidObject` when the value is not a JSON object.
pub fn encode_for_storage(key: &str, obj: &mut Value) -> Result<Vec<u8>> {
    if !obj.is_object() {
        return Err(StorageError::invalid_object(
            key,
            "object must be a JSON object",
        ));
    }
    let taken = obj
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|meta| meta.remove("resourceVersion"));
    let encoded = serde_json::to_vec(obj).map_err(|e| StorageError::Internal(e.to_string()));
    if let Some(revision) = taken {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".to_string(), revision);
        }
    }
    encoded
}

/// Decodes stored bytes and stamps them with `revision`.
///
/// # Errors
/// `Internal` when the bytes are not JSON (the store is corrupt).
pub fn decode_from_storage(key: &str, data: &[u8], revision: u64) -> Result<Value> {
    let mut obj: Value = serde_json::from_slice(data)
        .map_err(|e| StorageError::Internal(format!("corrupt object at {key}: {e}")))?;
    set_object_resource_version(&mut obj, revision);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_the_revision() {
        let mut obj = json!({"metadata": {"name": "a"}});
        set_object_resource_version(&mut obj, 42);
        assert_eq!(object_resource_version(&obj).unwrap(), Some(42));
        let bytes = encode_for_storage("/k", &mut obj).unwrap();
        assert_eq!(
            obj["metadata"]["resourceVersion"], "42",
            "the caller's object keeps it"
        );
        assert!(!String::from_utf8(bytes.clone())
            .unwrap()
            .contains("resourceVersion"));
        let back = decode_from_storage("/k", &bytes, 7).unwrap();
        assert_eq!(back["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn rejects_garbage_resource_versions() {
        assert!(parse_resource_version("abc").unwrap_err().is_bad_request());
        assert!(parse_resource_version("-1").unwrap_err().is_bad_request());
        assert_eq!(parse_resource_version("").unwrap(), None);
        assert!(encode_for_storage("/k", &mut json!([1]))
            .unwrap_err()
            .is_invalid_object());
    }
}
