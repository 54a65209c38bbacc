//! Protobuf from the watch cache's shared objects: each object version's protobuf body is
//! encoded once and kept with the object ([`SharedObject::protobuf_encoding`]); a GET answers
//! it as it is, a watch frame puts a few bytes of event before it, and a list writes the
//! messages inside the bodies behind its own envelope, as JSON clients get the shared JSON
//! bytes. The bytes are the ones [`super::encode`] and
//! [`super::encode_watch_frame`] write from a tree (prost writes fields in number order, and so
//! do these), which the tests check.

use bytes::Bytes;
use prost::encoding::{decode_varint, encode_key, encode_varint, encoded_len_varint, WireType};
use prost::Message;

use super::bridge::JsonValue;
use super::{codec, meta, TypeMeta, MAGIC};
use strategy_host_registry::ListPage;
use strategy_host_storage::SharedObject;

/// What follows `runtime.Unknown.raw`: `contentEncoding` and `contentType`, both written empty
/// as kube-apiserver does (fields 3 and 4, length 0).
const ENVELOPE_TAIL: &[u8] = &[0x1a, 0x00, 0x22, 0x00];

/// The object's protobuf body (the magic and a `runtime.Unknown` around its message, what a GET
/// answers), encoded on first use and kept with this version of the object; `None` when its
/// kind has no protobuf form here or the object does not fit its message (logged: the client
/// is answered JSON instead).
pub fn object_body(obj: &SharedObject) -> Option<Bytes> {
    obj.protobuf_encoding(|obj| {
        let (api_version, kind) = (obj.api_version()?, obj.kind()?);
        if kind.ends_with("List") {
            return None;
        }
        let codec = codec(api_version, kind)?;
        match (codec.to_proto)(&obj.to_value()) {
            Ok(raw) => {
                let mut body = envelope_head(api_version, kind, raw.len());
                body.extend_from_slice(&raw);
                body.extend_from_slice(ENVELOPE_TAIL);
                Some(Bytes::from(body))
            }
            Err(e) => {
                tracing::warn!(error = %e, kind, "serving JSON: the object has no protobuf form");
                None
            }
        }
    })
}

/// The object's message alone (no magic, no envelope), as a list's items carry it: a view into
/// [`object_body`]'s shared bytes.
fn message(obj: &SharedObject) -> Option<Bytes> {
    let body = object_body(obj)?;
    // Skip the magic, typeMeta's key, length and bytes, and raw's key; read raw's length.
    let mut rest = body.get(MAGIC.len() + 1..)?;
    let type_meta_len = usize::try_from(decode_varint(&mut rest).ok()?).ok()?;
    let mut rest = rest.get(type_meta_len + 1..)?;
    let raw_len = usize::try_from(decode_varint(&mut rest).ok()?).ok()?;
    let start = body.len() - rest.len();
    (rest.len() == raw_len + ENVELOPE_TAIL.len()).then(|| body.slice(start..start + raw_len))
}

/// One watch frame (see [`super::encode_watch_frame`]) for `obj`, as the parts to write in
/// turn: the length prefix with the event up to the object, and the object's shared body.
/// `None` as for [`object_body`].
pub fn watch_frame(event_type: &str, obj: &SharedObject) -> Option<[Bytes; 2]> {
    let body = object_body(obj)?;
    // WatchEvent { type = 1; object = 2: RawExtension { raw = 1 } }.
    let raw_extension_len = 1 + encoded_len_varint(body.len() as u64) + body.len();
    let event_len = 1
        + encoded_len_varint(event_type.len() as u64)
        + event_type.len()
        + 1
        + encoded_len_varint(raw_extension_len as u64)
        + raw_extension_len;
    let prefix = u32::try_from(event_len).ok()?;
    let mut head = Vec::with_capacity(32);
    head.extend_from_slice(&prefix.to_be_bytes());
    encode_key(1, WireType::LengthDelimited, &mut head);
    encode_varint(event_type.len() as u64, &mut head);
    head.extend_from_slice(event_type.as_bytes());
    encode_key(2, WireType::LengthDelimited, &mut head);
    encode_varint(raw_extension_len as u64, &mut head);
    encode_key(1, WireType::LengthDelimited, &mut head);
    encode_varint(body.len() as u64, &mut head);
    Some([head.into(), body])
}

/// A list body: the magic and a `runtime.Unknown` around the `{Kind}List` message, whose
/// `metadata` (field 1) is written here and whose `items` (field 2) are the items' shared
/// messages, each behind its key and length. `None` when the list or one of its items has no
/// protobuf form (the caller answers from a tree, or JSON).
pub fn list_body(page: &ListPage) -> Option<ListBody> {
    codec(&page.api_version, &page.kind)?.item_kind?;
    let messages = page
        .items
        .iter()
        .map(|item| message(item))
        .collect::<Option<Vec<_>>>()?;
    let list_meta = meta::ListMeta::from_json(&page.metadata()).ok()?;
    let mut metadata = Vec::with_capacity(list_meta.encoded_len() + 8);
    encode_key(1, WireType::LengthDelimited, &mut metadata);
    list_meta.encode_length_delimited(&mut metadata).ok()?;
    let list_len = metadata.len()
        + messages
            .iter()
            .map(|m| 1 + encoded_len_varint(m.len() as u64) + m.len())
            .sum::<usize>();
    let mut head = envelope_head(&page.api_version, &page.kind, list_len);
    head.extend_from_slice(&metadata);
    Some(ListBody {
        head: head.into(),
        items: messages,
    })
}

/// A protobuf list to write in parts: [`ListBody::head`], then each item behind
/// [`item_key`], then [`ListBody::TAIL`].
pub struct ListBody {
    /// The magic, the envelope up to its message and the list's `metadata`.
    pub head: Bytes,
    /// The items' shared messages.
    pub items: Vec<Bytes>,
}

impl ListBody {
    /// What follows the last item.
    pub const TAIL: &'static [u8] = ENVELOPE_TAIL;
}

/// The key and length that put `message` in a list's `items` (field 2), appended to `out`.
pub fn item_key(message: &[u8], out: &mut Vec<u8>) {
    encode_key(2, WireType::LengthDelimited, out);
    encode_varint(message.len() as u64, out);
}

/// The magic and a `runtime.Unknown` up to the first byte of a `raw` of `raw_len` bytes:
/// `typeMeta` (field 1), then `raw`'s key and length (field 2).
fn envelope_head(api_version: &str, kind: &str, raw_len: usize) -> Vec<u8> {
    let type_meta = TypeMeta {
        api_version: Some(api_version.to_owned()),
        kind: Some(kind.to_owned()),
    };
    let mut head = Vec::with_capacity(MAGIC.len() + type_meta.encoded_len() + 16);
    head.extend_from_slice(&MAGIC);
    encode_key(1, WireType::LengthDelimited, &mut head);
    type_meta
        .encode_length_delimited(&mut head)
        .expect("a Vec grows to hold any message");
    encode_key(2, WireType::LengthDelimited, &mut head);
    encode_varint(raw_len as u64, &mut head);
    head
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn config_map(name: &str) -> SharedObject {
        SharedObject::new(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": "12",
                         "labels": {"app": "web"}, "uid": "u-1"},
            "data": {"k": "v".repeat(300)},
        }))
    }

    fn joined(parts: &[Bytes]) -> Vec<u8> {
        parts.iter().flat_map(|p| p.iter().copied()).collect()
    }

    #[test]
    fn shared_bodies_are_the_bytes_the_tree_encoding_writes() {
        let obj = config_map("a");
        let body = object_body(&obj).expect("a ConfigMap has a protobuf form");
        assert_eq!(
            body.to_vec(),
            super::super::encode(&obj.to_value()).unwrap().unwrap()
        );
        for event in ["ADDED", "MODIFIED", "DELETED"] {
            let frame = watch_frame(event, &obj).unwrap();
            assert_eq!(
                joined(&frame),
                super::super::encode_watch_frame(event, &obj.to_value())
                    .unwrap()
                    .unwrap(),
                "{event}"
            );
        }
    }

    #[test]
    fn a_list_written_in_parts_is_the_list_encoded_from_a_tree() {
        let page = ListPage {
            api_version: "v1".into(),
            kind: "ConfigMapList".into(),
            resource_version: 40,
            continue_token: Some("next".into()),
            remaining_item_count: Some(7),
            items: (0..3)
                .map(|i| Arc::new(config_map(&format!("c{i}"))))
                .collect(),
        };
        let body = list_body(&page).expect("ConfigMaps have a protobuf form");
        let mut bytes = body.head.to_vec();
        for item in &body.items {
            item_key(item, &mut bytes);
            bytes.extend_from_slice(item);
        }
        bytes.extend_from_slice(ListBody::TAIL);
        assert_eq!(
            bytes,
            super::super::encode(&page.to_value()).unwrap().unwrap()
        );
        let decoded = super::super::decode(&bytes).unwrap();
        assert_eq!(decoded["metadata"]["continue"], "next");
        assert_eq!(decoded["items"][2]["metadata"]["name"], "c2");
    }

    #[test]
    fn the_message_is_encoded_once_per_object_version() {
        let obj = config_map("a");
        let first = object_body(&obj).unwrap();
        let again = object_body(&obj).unwrap();
        // The same allocation: the second read encoded nothing.
        assert_eq!(first.as_ptr(), again.as_ptr());
        // Another version (a DELETED event's) is encoded afresh, with its resourceVersion.
        let deleted = obj.at_revision(13);
        let decoded = super::super::decode(&object_body(&deleted).unwrap()).unwrap();
        assert_eq!(decoded["metadata"]["resourceVersion"], "13");
    }

    #[test]
    fn kinds_without_a_protobuf_form_have_no_shared_message() {
        let widget = SharedObject::new(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}}));
        assert!(message(&widget).is_none());
        // A ConfigMap whose data is not a map of strings does not fit its message.
        let odd = SharedObject::new(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "o"}, "data": {"k": 1}}));
        assert!(object_body(&odd).is_none());
        let page = ListPage {
            api_version: "v1".into(),
            kind: "ConfigMapList".into(),
            resource_version: 1,
            continue_token: None,
            remaining_item_count: None,
            items: vec![Arc::new(odd)],
        };
        assert!(list_body(&page).is_none());
    }
}
