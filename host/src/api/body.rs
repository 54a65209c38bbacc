//! Request bodies: read under a size cap (→ 413), content types checked (→ 415), JSON decoded
//! (→ 400), and duplicate fields found for strict field validation.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Limited};
use hyper::body::Incoming;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::status::Status;

/// The default request body cap: 3 MiB, as Kubernetes.
pub const DEFAULT_MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Reads the whole body, refusing more than `max` bytes.
///
/// # Errors
/// 413 over the cap; 400 when the body cannot be read.
pub async fn read(body: Incoming, max: usize) -> Result<Bytes, Status> {
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(too_large(max))
        }
        Err(e) => Err(Status::bad_request(format!(
            "unable to read the request body: {e}"
        ))),
    }
}

/// The 413 answer.
pub fn too_large(max: usize) -> Status {
    Status::too_large(format!(
        "the request body is larger than the limit of {max} bytes"
    ))
}

/// The media type of a `Content-Type` header, lowercased, without parameters.
pub fn media_type(content_type: Option<&str>) -> String {
    content_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Checks a create/update body's content type (JSON or none).
///
/// # Errors
/// 415 for anything else.
pub fn require_json(content_type: Option<&str>) -> Result<(), Status> {
    match media_type(content_type).as_str() {
        "" | "application/json" | "*/*" => Ok(()),
        other => Err(Status::unsupported_media_type(format!(
            "the body of the request was in an unknown format ({other}) - accepted media types include: application/json"
        ))),
    }
}

/// Decodes a JSON object body.
///
/// # Errors
/// 400 for malformed JSON or a body that is not an object.
pub fn decode_object(bytes: &[u8]) -> Result<Value, Status> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        Status::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })?;
    if !value.is_object() {
        return Err(Status::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(value)
}

/// Paths of fields that appear more than once in the same JSON object.
pub fn duplicate_fields(bytes: &[u8]) -> Vec<String> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let _ = Walk {
        path: String::new(),
        found: &found,
    }
    .deserialize(&mut de);
    found.into_inner()
}

struct Walk<'a> {
    path: String,
    found: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            if !seen.insert(key) {
                self.found.borrow_mut().push(path.clone());
            }
            map.next_value_seed(Walk {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Walk {
                path: format!("{}[{i}]", self.path),
                found: self.found,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicates() {
        let dups = duplicate_fields(br#"{"a":1,"b":{"c":1,"c":2},"d":[{"e":1,"e":1}],"a":2}"#);
        assert_eq!(dups, vec!["b.c", "d[0].e", "a"]);
        assert!(decode_object(b"[1]").is_err());
        assert!(decode_object(b"{").is_err());
        assert_eq!(
            media_type(Some("Application/JSON; charset=utf-8")),
            "application/json"
        );
    }
}
