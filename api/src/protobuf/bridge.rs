//! The JSON bridge for k8s-pb's structs: the `bridge_messages!` macro and the two traits it is
//! driven by (`JsonValue` for what a field holds, `JsonField` for how a field is present).
//!
//! k8s-pb's structs are prost messages without serde. `bridge_messages!` lists, for one struct,
//! each Rust field with its Kubernetes JSON name and writes both directions. Both destructure the
//! struct exhaustively (`let T { a, b } = self;` and `T { a: .., b: .. }`, never `..`), so a field
//! k8s-pb adds that is not listed fails to compile instead of being dropped.
//!
//! Presence follows Kubernetes' Go types, which k8s-pb's proto2 `Option`s do not tell apart:
//! a Go value field with `omitempty` (most strings and numbers) is left out of JSON when it is
//! the zero value — Go clients send `""` and `0` for every unset one — while a Go pointer field
//! (`immutable`, `deletionGracePeriodSeconds`, the Lease spec) or a field without `omitempty`
//! (a list's `items`) is marked `(keep)` and written whenever it is set, zero or not. A Go
//! struct embedded inline (`json:",inline"`) is listed with the key `""` and `(inline)`: its
//! fields are the enclosing object's own.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::ProtobufError;

/// One value in its Kubernetes JSON form: a scalar, a bridged message, or one of the
/// well-known types that have a JSON form of their own (`Time`, `Quantity`, ...).
pub(super) trait JsonValue: Sized {
    /// The JSON form. `Value::Null` means "no value" (a zero `Time`): the field is left out.
    fn to_json(&self) -> Result<Value, ProtobufError>;

    /// Reads the JSON form. Never given `null`: a field takes `null` as absent first.
    fn from_json(value: &Value) -> Result<Self, ProtobufError>;

    /// Whether this is Go's zero value (`""`, `0`, `false`, empty bytes), which `omitempty`
    /// leaves out.
    fn is_zero(&self) -> bool {
        false
    }

    /// Test support: appends the path of every field that is unset (absent, empty list or
    /// map), in this value and below, so a fixture can prove it sets every field.
    #[cfg(test)]
    fn unset_fields(&self, _path: &str, _out: &mut Vec<String>) {}
}

/// How a set field that holds a zero value or an empty list or map shows in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Presence {
    /// A Go value field with `omitempty`: zero values and empty lists and maps are left out.
    OmitEmpty,
    /// A Go pointer field, or one without `omitempty`: written whenever it is set.
    Keep,
    /// A struct embedded inline: its fields are written into the enclosing object.
    Inline,
}

/// One field of a k8s-pb struct: `Option<T>` of a [`JsonValue`], or a [`Repeated`] one
/// (`Vec<T>`, `BTreeMap<String, T>`).
pub(super) trait JsonField: Sized {
    /// Writes the field into `obj` under `key`, or leaves it out (absent, or empty under
    /// [`Presence::OmitEmpty`]).
    fn put(
        &self,
        obj: &mut Map<String, Value>,
        key: &'static str,
        presence: Presence,
    ) -> Result<(), ProtobufError>;

    /// Reads the field `key` of `obj`; absent and `null` are the field's absent value.
    /// An inline field (key `""`) reads its members from `obj` itself.
    fn take(obj: &Map<String, Value>, key: &str) -> Result<Self, ProtobufError>;

    /// Test support: see [`JsonValue::unset_fields`].
    #[cfg(test)]
    fn unset_fields(&self, path: &str, out: &mut Vec<String>);
}

/// Writes a present field's value unless `OmitEmpty` leaves its zero value out; a value whose
/// JSON form is `null` (a zero `Time`) is left out too.
fn put_value<T: JsonValue>(
    value: &T,
    obj: &mut Map<String, Value>,
    key: &'static str,
    presence: Presence,
) -> Result<(), ProtobufError> {
    if presence == Presence::OmitEmpty && value.is_zero() {
        return Ok(());
    }
    if presence == Presence::Inline {
        if let Value::Object(members) = value.to_json()? {
            obj.extend(members);
        }
        return Ok(());
    }
    let json = value.to_json().map_err(|e| e.within(key))?;
    if !json.is_null() {
        obj.insert(key.to_owned(), json);
    }
    Ok(())
}

/// Reads the value of field `key`; `None` when it is absent or `null`.
fn take_value<T: JsonValue>(
    obj: &Map<String, Value>,
    key: &str,
) -> Result<Option<T>, ProtobufError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => T::from_json(value).map(Some).map_err(|e| e.within(key)),
    }
}

impl<T: JsonValue> JsonField for Option<T> {
    fn put(
        &self,
        obj: &mut Map<String, Value>,
        key: &'static str,
        presence: Presence,
    ) -> Result<(), ProtobufError> {
        self.as_ref()
            .map_or(Ok(()), |value| put_value(value, obj, key, presence))
    }

    fn take(obj: &Map<String, Value>, key: &str) -> Result<Self, ProtobufError> {
        if key.is_empty() {
            return T::from_json(&Value::Object(obj.clone())).map(Some);
        }
        take_value(obj, key)
    }

    #[cfg(test)]
    fn unset_fields(&self, path: &str, out: &mut Vec<String>) {
        match self {
            None => out.push(path.to_owned()),
            Some(value) => value.unset_fields(path, out),
        }
    }
}

/// A repeated field, a list or a map: never absent, only empty (its zero value).
pub(super) trait Repeated: JsonValue + Default {}

impl<T: JsonValue> Repeated for Vec<T> {}

impl<T: JsonValue> Repeated for BTreeMap<String, T> {}

impl<C: Repeated> JsonField for C {
    fn put(
        &self,
        obj: &mut Map<String, Value>,
        key: &'static str,
        presence: Presence,
    ) -> Result<(), ProtobufError> {
        put_value(self, obj, key, presence)
    }

    fn take(obj: &Map<String, Value>, key: &str) -> Result<Self, ProtobufError> {
        Ok(take_value(obj, key)?.unwrap_or_default())
    }

    #[cfg(test)]
    fn unset_fields(&self, path: &str, out: &mut Vec<String>) {
        JsonValue::unset_fields(self, path, out);
    }
}

/// A list: a JSON array; errors name the item's index.
impl<T: JsonValue> JsonValue for Vec<T> {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        self.iter()
            .enumerate()
            .map(|(i, v)| v.to_json().map_err(|e| e.at_index(i)))
            .collect::<Result<_, _>>()
            .map(Value::Array)
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        let items = value
            .as_array()
            .ok_or_else(|| ProtobufError::expected("an array", value))?;
        items
            .iter()
            .enumerate()
            .map(|(i, v)| T::from_json(v).map_err(|e| e.at_index(i)))
            .collect()
    }

    fn is_zero(&self) -> bool {
        self.is_empty()
    }

    #[cfg(test)]
    fn unset_fields(&self, path: &str, out: &mut Vec<String>) {
        let items = self.iter().enumerate().map(|(i, v)| (i.to_string(), v));
        unset_items(path, items, out);
    }
}

/// A map: a JSON object; errors name the entry's key.
impl<T: JsonValue> JsonValue for BTreeMap<String, T> {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        self.iter()
            .map(|(k, v)| Ok((k.clone(), v.to_json().map_err(|e| e.at_key(k))?)))
            .collect::<Result<_, _>>()
            .map(Value::Object)
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        let map = value
            .as_object()
            .ok_or_else(|| ProtobufError::expected("an object", value))?;
        map.iter()
            .map(|(k, v)| Ok((k.clone(), T::from_json(v).map_err(|e| e.at_key(k))?)))
            .collect()
    }

    fn is_zero(&self) -> bool {
        self.is_empty()
    }

    #[cfg(test)]
    fn unset_fields(&self, path: &str, out: &mut Vec<String>) {
        unset_items(path, self.iter().map(|(k, v)| (k.clone(), v)), out);
    }
}

/// Test support: the unset fields of a list's or map's items, each under `path[label]`; an
/// empty list or map is itself unset.
#[cfg(test)]
fn unset_items<'a, T: JsonValue + 'a>(
    path: &str,
    items: impl ExactSizeIterator<Item = (String, &'a T)>,
    out: &mut Vec<String>,
) {
    if items.len() == 0 {
        out.push(path.to_owned());
    }
    for (label, value) in items {
        value.unset_fields(&format!("{path}[{label}]"), out);
    }
}

/// A scalar whose JSON form is serde's own (a string, a boolean, an integer) and whose Go zero
/// value is its `Default`.
pub(super) trait Scalar:
    Serialize + for<'de> Deserialize<'de> + Default + PartialEq
{
    /// What a reader expected, for the error when the JSON holds something else.
    const EXPECTED: &'static str;
}

impl Scalar for String {
    const EXPECTED: &'static str = "a string";
}

impl Scalar for bool {
    const EXPECTED: &'static str = "a boolean";
}

impl Scalar for i64 {
    const EXPECTED: &'static str = "a 64-bit integer";
}

impl Scalar for i32 {
    const EXPECTED: &'static str = "a 32-bit integer";
}

impl<T: Scalar> JsonValue for T {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        serde_json::to_value(self).map_err(|e| ProtobufError::invalid(e.to_string()))
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        // `&Value` is a deserializer: a string is read without copying the tree.
        T::deserialize(value).map_err(|_| ProtobufError::expected(T::EXPECTED, value))
    }

    fn is_zero(&self) -> bool {
        *self == T::default()
    }
}

/// Bytes: a base64 string (standard alphabet, padded), as Go's `encoding/json` writes `[]byte`.
impl JsonValue for Vec<u8> {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        Ok(Value::String(
            base64::engine::general_purpose::STANDARD.encode(self),
        ))
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        let text = value
            .as_str()
            .ok_or_else(|| ProtobufError::expected("a base64 string", value))?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| ProtobufError::invalid(format!("invalid base64: {e}")))
    }

    fn is_zero(&self) -> bool {
        self.is_empty()
    }
}

/// The JSON object a message is read from.
pub(super) fn as_object(value: &Value) -> Result<&Map<String, Value>, ProtobufError> {
    value
        .as_object()
        .ok_or_else(|| ProtobufError::expected("an object", value))
}

/// Implements [`JsonValue`] for k8s-pb structs from their field lists:
///
/// ```ignore
/// bridge_messages! {
///     meta::OwnerReference {
///         api_version => "apiVersion",
///         controller => "controller" (keep),
///     }
/// }
/// ```
///
/// Every field must be listed (the struct is destructured without `..`); `(keep)` marks a
/// field written even when zero or empty, `"" (inline)` one embedded inline (see
/// [`Presence`]). JSON keys not listed (such as
/// `apiVersion` and `kind` at the top) are ignored when reading.
macro_rules! bridge_messages {
    (@presence) => {
        $crate::protobuf::bridge::Presence::OmitEmpty
    };
    (@presence keep) => {
        $crate::protobuf::bridge::Presence::Keep
    };
    (@presence inline) => {
        $crate::protobuf::bridge::Presence::Inline
    };
    ($(
        $ty:path {
            $( $field:ident => $json:literal $( ($presence:ident) )? ),* $(,)?
        }
    )*) => {$(
        impl $crate::protobuf::bridge::JsonValue for $ty {
            fn to_json(
                &self,
            ) -> ::std::result::Result<
                ::serde_json::Value,
                $crate::protobuf::error::ProtobufError,
            > {
                let Self { $( $field ),* } = self;
                let mut obj = ::serde_json::Map::new();
                $(
                    $crate::protobuf::bridge::JsonField::put(
                        $field,
                        &mut obj,
                        $json,
                        bridge_messages!(@presence $($presence)?),
                    )?;
                )*
                Ok(::serde_json::Value::Object(obj))
            }

            fn from_json(
                value: &::serde_json::Value,
            ) -> ::std::result::Result<Self, $crate::protobuf::error::ProtobufError> {
                let obj = $crate::protobuf::bridge::as_object(value)?;
                Ok(Self {
                    $( $field: $crate::protobuf::bridge::JsonField::take(obj, $json)?, )*
                })
            }

            #[cfg(test)]
            fn unset_fields(&self, path: &str, out: &mut Vec<String>) {
                let Self { $( $field ),* } = self;
                $(
                    let child = if $json.is_empty() {
                        path.to_owned()
                    } else if path.is_empty() {
                        $json.to_owned()
                    } else {
                        format!("{path}.{}", $json)
                    };
                    $crate::protobuf::bridge::JsonField::unset_fields($field, &child, out);
                )*
            }
        }
    )*};
}

pub(super) use bridge_messages;
