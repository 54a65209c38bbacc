//! A [`LazyObject`] read from JSON text and written back as JSON: untouched members go out as
//! the text they came in as.

use std::sync::Arc;

use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::scan::{self, ScanError};
use super::{LazyObject, Member, Name, Span};

impl LazyObject {
    /// Reads the JSON object `text`, finding where each member's text lies without parsing any
    /// value. The members' values are taken as valid JSON (see [`scan`]): `text` is the host's,
    /// or checked already.
    pub(crate) fn from_json(text: Arc<[u8]>) -> Result<Self, ScanError> {
        let mut object = LazyObject::new();
        scan::object(&text, |found| object.push_found(&text, found))?;
        object.text = Some(text);
        Ok(object)
    }

    /// The object whose text is `span` of `text` (a member of an object read from it).
    pub(super) fn within(text: Arc<[u8]>, span: Span) -> Result<Self, ScanError> {
        let mut object = LazyObject::new();
        scan::members(&text[..span.end], span.start, |found| {
            object.push_found(&text, found)
        })?;
        object.text = Some(text);
        Ok(object)
    }

    fn push_found(&mut self, text: &[u8], found: scan::Found) {
        let name = match found.escaped {
            false => Name::Input(found.name.into()),
            // Invalid escapes keep their text: serde_json would have refused them already.
            true => Name::Own(scan::unescape(text, &found.name).unwrap_or_else(|| {
                String::from_utf8_lossy(&text[found.name.clone()]).into_owned()
            })),
        };
        self.members.push((name, Member::Raw(found.value.into())));
    }

    /// Appends the object as JSON text to `out`: untouched members' names and values as they
    /// arrived, the rest encoded.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let text = self.text_bytes();
        out.push(b'{');
        for (at, (name, member)) in self.members.iter().enumerate() {
            if at > 0 {
                out.push(b',');
            }
            match name {
                Name::Input(_) => {
                    out.push(b'"');
                    out.extend_from_slice(name.bytes(text));
                    out.push(b'"');
                }
                Name::Own(name) => serde_json::to_writer(&mut *out, name)?,
            }
            out.push(b':');
            member.write_json(text, out)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// The object as JSON text.
    pub(super) fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Values encode: serde_json fails only on maps with keys that are not strings.
        let _ = self.write_json(&mut out);
        out
    }
}

impl Member {
    /// Appends this member's value to `out`; `text` is the text of the object it is in.
    pub(super) fn write_json(
        &self,
        text: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        match self {
            Member::Raw(span) => out.extend_from_slice(span.of(text)),
            Member::Copied(copied) => out.extend_from_slice(copied.bytes()),
            Member::Opened(object) | Member::New(object) => object.write_json(out)?,
            Member::Value(value) => serde_json::to_writer(&mut *out, value)?,
        }
        Ok(())
    }
}

impl Serialize for LazyObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut text = Vec::with_capacity(256);
        self.write_json(&mut text).map_err(S::Error::custom)?;
        // Serializers take JSON text through serde_json's raw value (which checks it).
        let raw: &RawValue = serde_json::from_slice(&text).map_err(S::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for LazyObject {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        // serde_json checks the whole text once; the scan then only finds the members.
        let raw = Box::<RawValue>::deserialize(de)?;
        let text: Box<str> = raw.into();
        LazyObject::from_json(Arc::from(text.into_boxed_bytes())).map_err(D::Error::custom)
    }
}
