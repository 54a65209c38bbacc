//! The shared object: one stored object as its serialized JSON plus the few fields selection
//! needs, held once and shared by the watch cache, lists and every watcher.
//!
//! Why bytes and not a parsed tree: a `serde_json::Value` of a 1 KiB object takes about ten
//! times its size, and every list or watch event would serialize it again. Here the bytes are
//! made once (read from the store, or serialized once after a write) and written to every
//! client as they are; a tree is parsed only where a caller needs one.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::Value;

use super::error::{Result, StorageError};

/// An object shared by every reader and watcher that sees it, stamped with its
/// resourceVersion: its compact JSON and what selection reads (name, namespace, labels, kind).
#[derive(Debug, Clone)]
pub struct SharedObject {
    json: Bytes,
    revision: u64,
    head: Head,
    /// The object's Kubernetes protobuf encoding, made by the API layer the first time a
    /// protobuf client reads this version and kept for every later one (Kubernetes' cacher
    /// keeps serializations the same way, in its `cachingObject`). `Some(None)`: it has none.
    protobuf: OnceLock<Option<Bytes>>,
    /// Where the `metadata` member's value lies in `json` (its first and past-its-last byte),
    /// found the first time a conversion's answer is compared with it and kept, so converting
    /// a list again scans only the answers. `Some(None)`: the object has no metadata.
    metadata_span: OnceLock<Option<(u32, u32)>>,
}

/// What is read from an object without parsing all of it.
#[derive(Debug, Default, Clone)]
struct Head {
    api_version: Option<Box<str>>,
    kind: Option<Box<str>>,
    name: Option<Box<str>>,
    namespace: Option<Box<str>>,
    /// The labels, sorted by key.
    labels: Box<[(Box<str>, Box<str>)]>,
}

/// The top level of an object, its members left unparsed (keys sorted, as `serde_json::Map`
/// orders them).
type Members<'a> = BTreeMap<Cow<'a, str>, &'a RawValue>;

impl SharedObject {
    /// Wraps an object (serializing it once).
    pub fn new(value: Value) -> Self {
        let json = serde_json::to_vec(&value).unwrap_or_default();
        Self::from_json(held(json)).unwrap_or_else(|_| Self {
            json: Bytes::from_static(b"null"),
            revision: 0,
            head: Head::default(),
            protobuf: OnceLock::new(),
            metadata_span: OnceLock::new(),
        })
    }

    /// An object from its JSON encoding, which must be a JSON object.
    ///
    /// # Errors
    /// `Internal` when the bytes are not a JSON object.
    pub fn from_json(json: Bytes) -> Result<Self> {
        let members: Members<'_> = serde_json::from_slice(&json).map_err(corrupt)?;
        // A head is read from what there is (an object without metadata has none).
        let metadata = metadata_of(&members).ok().flatten();
        let (head, revision) = read_head(&members, metadata.as_ref());
        Ok(Self {
            revision: revision.unwrap_or(0),
            head,
            json,
            protobuf: OnceLock::new(),
            metadata_span: OnceLock::new(),
        })
    }

    /// An object as a store holds it (without a resourceVersion), stamped with `revision`
    /// in its bytes.
    ///
    /// # Errors
    /// `Internal` naming `key` when the stored bytes are not a JSON object (a corrupt store).
    pub fn from_stored(key: &str, data: &[u8], revision: u64) -> Result<Self> {
        let corrupt_at =
            |e: serde_json::Error| StorageError::Internal(format!("corrupt object at {key}: {e}"));
        let members: Members<'_> = serde_json::from_slice(data).map_err(corrupt_at)?;
        let metadata = metadata_of(&members).map_err(corrupt_at)?;
        let (head, _) = read_head(&members, metadata.as_ref());
        let json = stamp(data, &members, metadata.as_ref(), revision).map_err(corrupt_at)?;
        Ok(Self {
            json: held(json),
            revision,
            head,
            protobuf: OnceLock::new(),
            metadata_span: OnceLock::new(),
        })
    }

    /// The same object stamped with another resourceVersion (what a DELETED event carries:
    /// the last state at the deletion's revision).
    pub fn at_revision(&self, revision: u64) -> Self {
        if revision == self.revision {
            return self.clone();
        }
        let stamped = serde_json::from_slice::<Members<'_>>(&self.json).and_then(|members| {
            let metadata = metadata_of(&members)?;
            stamp(&self.json, &members, metadata.as_ref(), revision)
        });
        match stamped {
            Ok(json) => Self {
                json: held(json),
                revision,
                head: self.head.clone(),
                protobuf: OnceLock::new(),
                metadata_span: OnceLock::new(),
            },
            // Not an object (cannot happen for what a store holds): keep the bytes.
            Err(_) => Self {
                revision,
                protobuf: OnceLock::new(),
                metadata_span: OnceLock::new(),
                ..self.clone()
            },
        }
    }

    /// The same object with another `apiVersion` and `kind` (a version change that converts
    /// nothing else): the top level re-written around its members, which are not parsed.
    pub fn with_type(&self, api_version: &str, kind: &str) -> Self {
        let retyped = serde_json::from_slice::<Members<'_>>(&self.json).and_then(|members| {
            let api = serde_json::value::to_raw_value(api_version)?;
            let kind_raw = serde_json::value::to_raw_value(kind)?;
            let mut top = members;
            top.insert(Cow::Borrowed("apiVersion"), &api);
            top.insert(Cow::Borrowed("kind"), &kind_raw);
            serde_json::to_vec(&top)
        });
        match retyped {
            Ok(json) => Self {
                json: held(json),
                revision: self.revision,
                head: Head {
                    api_version: Some(api_version.into()),
                    kind: Some(kind.into()),
                    ..self.head.clone()
                },
                protobuf: OnceLock::new(),
                metadata_span: OnceLock::new(),
            },
            // Not an object (cannot happen for what a store holds): keep it as it is.
            Err(_) => self.clone(),
        }
    }

    /// This object as a converter answered it (`json`, at `api_version`), when the answer kept
    /// its `kind` and its `metadata` byte for byte — what a conversion that changed only the
    /// version and the body answers: everything read from the head stays, nothing is parsed
    /// beyond the answer's top level.
    ///
    /// # Errors
    /// `json` back when anything else changed (or it is not an object), for the caller to
    /// look closer.
    pub fn converted(
        &self,
        json: Vec<u8>,
        api_version: &str,
    ) -> std::result::Result<Self, Vec<u8>> {
        let kept = || -> Option<Option<(u32, u32)>> {
            if let Some(span) = self.answer_keeps_head(&json, api_version) {
                return Some(Some(span));
            }
            let answer: Members<'_> = serde_json::from_slice(&json).ok()?;
            let metadata = answer.get("metadata").map(|raw| raw.get().as_bytes());
            let same = text_member(Some(&answer), "apiVersion").as_deref() == Some(api_version)
                && text_member(Some(&answer), "kind").as_deref() == Some(self.kind()?)
                && metadata == self.metadata_text();
            same.then(|| metadata.and_then(|text| span_in(&json, text)))
        };
        let Some(metadata_span) = kept() else {
            return Err(json);
        };
        Ok(Self {
            json: held(json),
            revision: self.revision,
            head: Head {
                api_version: Some(api_version.into()),
                ..self.head.clone()
            },
            protobuf: OnceLock::new(),
            metadata_span: OnceLock::from(metadata_span),
        })
    }

    /// Where the answer's metadata lies when the answer opens exactly as this object's text
    /// would at `api_version` (`{"apiVersion":…,"kind":…,"metadata":` and this object's
    /// metadata) and the members after it are valid JSON naming none of those three again: how
    /// a converter that writes the object back in its own order answers. The metadata, most of
    /// an object's text, is then compared rather than parsed again.
    fn answer_keeps_head(&self, json: &[u8], api_version: &str) -> Option<(u32, u32)> {
        let metadata = self.metadata_text()?;
        let mut head = Vec::with_capacity(64);
        head.extend_from_slice(b"{\"apiVersion\":");
        serde_json::to_writer(&mut head, api_version).ok()?;
        head.extend_from_slice(b",\"kind\":");
        serde_json::to_writer(&mut head, self.kind()?).ok()?;
        head.extend_from_slice(b",\"metadata\":");
        let rest = json.strip_prefix(head.as_slice())?.strip_prefix(metadata)?;
        let valid = match rest.split_first()? {
            (b'}', after) => after.trim_ascii().is_empty(),
            (b',', members) => {
                let mut object = Vec::with_capacity(members.len() + 1);
                object.push(b'{');
                object.extend_from_slice(members);
                let members: Members<'_> = serde_json::from_slice(&object).ok()?;
                // Empty: the answer ended `,}`, which is not JSON.
                !members.is_empty()
                    && !["apiVersion", "kind", "metadata"]
                        .iter()
                        .any(|name| members.contains_key(*name))
            }
            _ => false,
        };
        let start = u32::try_from(head.len()).ok()?;
        let end = u32::try_from(head.len() + metadata.len()).ok()?;
        valid.then_some((start, end))
    }

    /// The text of the `metadata` member's value (`None`: the object has none), located once.
    fn metadata_text(&self) -> Option<&[u8]> {
        let (start, end) = (*self.metadata_span.get_or_init(|| {
            let members: Members<'_> = serde_json::from_slice(&self.json).ok()?;
            span_in(&self.json, members.get("metadata")?.get().as_bytes())
        }))?;
        self.json.get(start as usize..end as usize)
    }

    /// The object as compact JSON, shared (no copy).
    pub fn json(&self) -> Bytes {
        self.json.clone()
    }

    /// The object's Kubernetes protobuf encoding as `encode` makes it from this object: made
    /// on the first call and answered from then on to every reader of this version, so a
    /// protobuf watch or list costs a copy of bytes, like JSON, instead of an encoding per
    /// client (`None`: the object has no protobuf form). The storage layer keeps the bytes
    /// without knowing the format; every caller passes the same encoder
    /// (`api::protobuf::shared`).
    pub fn protobuf_encoding(&self, encode: impl FnOnce(&Self) -> Option<Bytes>) -> Option<Bytes> {
        self.protobuf.get_or_init(|| encode(self)).clone()
    }

    /// The object parsed into a tree (a fresh one per call: the shared form is the bytes).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    /// The object parsed into a tree.
    pub fn into_value(self: Arc<Self>) -> Value {
        self.to_value()
    }

    /// The object's resourceVersion (0 when missing).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// `metadata.name`, if any.
    pub fn name(&self) -> Option<&str> {
        self.head.name.as_deref()
    }

    /// `metadata.namespace`, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.head.namespace.as_deref()
    }

    /// `apiVersion`, if any.
    pub fn api_version(&self) -> Option<&str> {
        self.head.api_version.as_deref()
    }

    /// `kind`, if any.
    pub fn kind(&self) -> Option<&str> {
        self.head.kind.as_deref()
    }

    /// The value of label `key`, if set.
    pub fn label(&self, key: &str) -> Option<&str> {
        let labels = &self.head.labels;
        labels
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()
            .map(|i| labels[i].1.as_ref())
    }
}

impl std::fmt::Display for SharedObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.json))
    }
}

impl PartialEq for SharedObject {
    fn eq(&self, other: &Self) -> bool {
        self.json == other.json || self.to_value() == other.to_value()
    }
}

/// Bytes to hold for as long as the object is cached, without the spare capacity serializing
/// left (a `Vec` grows by doubling: a 1.5 KiB object would hold 2 KiB, a third more).
fn held(mut json: Vec<u8>) -> Bytes {
    json.shrink_to_fit();
    Bytes::from(json)
}

fn corrupt(e: serde_json::Error) -> StorageError {
    StorageError::Internal(format!("not a JSON object: {e}"))
}

/// The members of an object's `metadata` (`None` when it has none).
///
/// # Errors
/// When `metadata` is not a JSON object.
fn metadata_of<'a>(members: &Members<'a>) -> serde_json::Result<Option<Members<'a>>> {
    members
        .get("metadata")
        .map(|raw| serde_json::from_str(raw.get()))
        .transpose()
}

/// Where `part`, a slice of `whole`, lies in it (its first and past-its-last byte); `None` when
/// it is not within `whole` or lies past 4 GiB.
fn span_in(whole: &[u8], part: &[u8]) -> Option<(u32, u32)> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    let end = start + part.len();
    if end > whole.len() {
        return None;
    }
    Some((u32::try_from(start).ok()?, u32::try_from(end).ok()?))
}

/// Member `name` of `members` when it is a string.
fn text_member<'a>(members: Option<&Members<'a>>, name: &str) -> Option<Cow<'a, str>> {
    members?
        .get(name)
        .and_then(|raw| serde_json::from_str::<Cow<'a, str>>(raw.get()).ok())
}

/// Reads the head and the resourceVersion from an object's members and its metadata's.
fn read_head(members: &Members<'_>, metadata: Option<&Members<'_>>) -> (Head, Option<u64>) {
    let text = text_member;
    let labels: Option<BTreeMap<Cow<'_, str>, Option<Cow<'_, str>>>> = metadata
        .and_then(|m| m.get("labels"))
        .and_then(|raw| serde_json::from_str(raw.get()).ok());
    let revision = text(metadata, "resourceVersion").and_then(|rv| rv.parse::<u64>().ok());
    let head = Head {
        api_version: text(Some(members), "apiVersion").map(Into::into),
        kind: text(Some(members), "kind").map(Into::into),
        name: text(metadata, "name").map(Into::into),
        namespace: text(metadata, "namespace").map(Into::into),
        labels: labels
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| Some((k.into(), v?.into())))
            .collect(),
    };
    (head, revision)
}

/// The object's JSON with `metadata.resourceVersion` set to `revision`. The object's bytes are
/// copied around the one member written: after the last metadata member whose key sorts before
/// it (where serde_json, which writes members sorted, puts it), or over the old value. An object
/// without metadata gets one, written whole.
fn stamp(
    data: &[u8],
    members: &Members<'_>,
    metadata: Option<&Members<'_>>,
    revision: u64,
) -> serde_json::Result<Vec<u8>> {
    const KEY: &str = "resourceVersion";
    let value = format!("\"{revision}\"");
    let Some(metadata) = metadata else {
        let fresh = RawValue::from_string(format!("{{\"{KEY}\":{value}}}"))?;
        let mut top = members.clone();
        top.insert(Cow::Borrowed("metadata"), &fresh);
        return serde_json::to_vec(&top);
    };
    // Where each raw value lies in `data` (every member borrows from it).
    let offset = |raw: &str| raw.as_ptr() as usize - data.as_ptr() as usize;
    let (at, insert, cut) = match metadata.get(KEY) {
        Some(old) => (offset(old.get()), value, old.get().len()),
        None => match metadata
            .range::<str, _>((Unbounded, Excluded(KEY)))
            .next_back()
        {
            Some((_, before)) => {
                let end = offset(before.get()) + before.get().len();
                (end, format!(",\"{KEY}\":{value}"), 0)
            }
            None => {
                let open = offset(members["metadata"].get()) + 1;
                let comma = if metadata.is_empty() { "" } else { "," };
                (open, format!("\"{KEY}\":{value}{comma}"), 0)
            }
        },
    };
    let mut json = Vec::with_capacity(data.len() + insert.len());
    json.extend_from_slice(&data[..at]);
    json.extend_from_slice(insert.as_bytes());
    json.extend_from_slice(&data[at + cut..]);
    Ok(json)
}

#[cfg(test)]
mod tests;
