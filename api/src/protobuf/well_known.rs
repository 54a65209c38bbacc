//! The JSON forms of the apimachinery types that are not plain objects in JSON: `meta.v1.Time`
//! and `MicroTime` (RFC 3339 strings), `IntOrString`, `Quantity`, and `FieldsV1` and
//! `RawExtension` (embedded JSON).
//!
//! As in Kubernetes (`apis/meta/v1/time_proto.go`, `micro_time_proto.go`): a `Time` carries
//! whole seconds (nanos are written 0 and ignored when read) and shows as
//! `2024-01-02T03:04:05Z`; a `MicroTime` carries microseconds and shows as
//! `2024-01-02T03:04:05.123456Z`; an empty message, or Go's zero time, is no time at all and
//! is left out of JSON.

use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use k8s_pb::apimachinery::pkg::runtime::RawExtension;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::bridge::JsonValue;
use super::error::ProtobufError;
use strategy_host_registry::system_fields::{format_rfc3339, parse_rfc3339};

/// Seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z), which Kubernetes treats as unset.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;
/// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the years an RFC 3339 timestamp can hold.
const MIN_SECONDS: i64 = -62_167_219_200;
const MAX_SECONDS: i64 = 253_402_300_799;

/// `seconds` and `micros` as `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`; `None` for an unset time.
fn format_time(seconds: i64, micros: Option<u32>) -> Result<Option<String>, ProtobufError> {
    if seconds == GO_ZERO_TIME_SECONDS && micros.unwrap_or(0) == 0 {
        return Ok(None);
    }
    if !(MIN_SECONDS..=MAX_SECONDS).contains(&seconds) {
        return Err(ProtobufError::invalid(format!(
            "time {seconds}s since the epoch is outside years 0000-9999"
        )));
    }
    let text = format_rfc3339(seconds);
    Ok(Some(match micros {
        None => text,
        Some(micros) => format!("{}.{micros:06}Z", &text[..text.len() - 1]),
    }))
}

/// Parses an RFC 3339 timestamp to seconds since the epoch and nanoseconds.
fn parse_time(value: &Value) -> Result<(i64, u32), ProtobufError> {
    let text = value
        .as_str()
        .ok_or_else(|| ProtobufError::expected("an RFC 3339 timestamp string", value))?;
    let invalid = || ProtobufError::invalid(format!("invalid RFC 3339 timestamp {text:?}"));
    let seconds = parse_rfc3339(text).ok_or_else(invalid)?;
    let mut nanos = 0u32;
    if let Some(fraction) = text.get(19..).and_then(|rest| rest.strip_prefix('.')) {
        let digits: String = fraction
            .chars()
            .take_while(char::is_ascii_digit)
            .take(9)
            .collect();
        nanos = format!("{digits:0<9}").parse().map_err(|_| invalid())?;
    }
    Ok((seconds, nanos))
}

/// `nanos` of a message as a count below one second.
fn checked_nanos(nanos: Option<i32>) -> Result<u32, ProtobufError> {
    let nanos = nanos.unwrap_or(0);
    u32::try_from(nanos)
        .ok()
        .filter(|n| *n < 1_000_000_000)
        .ok_or_else(|| ProtobufError::invalid(format!("nanos {nanos} is not in 0..1e9")))
}

impl JsonValue for Time {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        // Kubernetes reads whole seconds only; the nanos are dropped.
        let Time { seconds, nanos: _ } = self;
        Ok(match seconds {
            None => Value::Null,
            Some(seconds) => format_time(*seconds, None)?.map_or(Value::Null, Value::String),
        })
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        let (seconds, _) = parse_time(value)?;
        Ok(Time {
            seconds: Some(seconds),
            nanos: Some(0),
        })
    }
}

impl JsonValue for MicroTime {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        let MicroTime { seconds, nanos } = self;
        if seconds.is_none() && nanos.is_none() {
            return Ok(Value::Null);
        }
        // Kubernetes keeps microseconds; the nanoseconds below them are dropped.
        let micros = checked_nanos(*nanos)? / 1000;
        Ok(format_time(seconds.unwrap_or(0), Some(micros))?.map_or(Value::Null, Value::String))
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        let (seconds, nanos) = parse_time(value)?;
        // Microseconds, as Kubernetes keeps them; below 1e9, so the cast is exact.
        let nanos = (nanos / 1000 * 1000) as i32;
        Ok(MicroTime {
            seconds: Some(seconds),
            nanos: Some(nanos),
        })
    }
}

/// A JSON number (type 0, `intVal`) or string (type 1, `strVal`).
impl JsonValue for IntOrString {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        let IntOrString {
            r#type,
            int_val,
            str_val,
        } = self;
        match r#type.unwrap_or(0) {
            0 => Ok(Value::from(int_val.unwrap_or(0))),
            1 => Ok(Value::String(str_val.clone().unwrap_or_default())),
            other => Err(ProtobufError::invalid(format!(
                "IntOrString type {other} is neither 0 (int) nor 1 (string)"
            ))),
        }
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        match value {
            Value::String(s) => Ok(IntOrString {
                r#type: Some(1),
                int_val: Some(0),
                str_val: Some(s.clone()),
            }),
            _ => {
                Ok(IntOrString {
                    r#type: Some(0),
                    int_val: Some(i32::from_json(value).map_err(|_| {
                        ProtobufError::expected("a 32-bit integer or a string", value)
                    })?),
                    str_val: Some(String::new()),
                })
            }
        }
    }
}

/// A string such as `"100Mi"`; a JSON number is taken as its decimal text, as Kubernetes does.
impl JsonValue for Quantity {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        let Quantity { string } = self;
        Ok(Value::String(match string.as_deref() {
            None | Some("") => "0".to_owned(),
            Some(s) => s.to_owned(),
        }))
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        let string = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => return Err(ProtobufError::expected("a quantity string", other)),
        };
        Ok(Quantity {
            string: Some(string),
        })
    }
}

/// The JSON document held in `raw`; no bytes is no value.
fn embedded_json(raw: Option<&[u8]>) -> Result<Value, ProtobufError> {
    match raw {
        None | Some([]) => Ok(Value::Null),
        Some(bytes) => serde_json::from_slice(bytes)
            .map_err(|e| ProtobufError::invalid(format!("raw bytes are not JSON: {e}"))),
    }
}

/// `value` as the bytes of a JSON document.
fn embed_json(value: &Value) -> Result<Option<Vec<u8>>, ProtobufError> {
    serde_json::to_vec(value)
        .map(Some)
        .map_err(|e| ProtobufError::invalid(format!("cannot serialise embedded JSON: {e}")))
}

/// `JsonValue` for messages whose `raw` bytes hold a JSON document, written as that document.
macro_rules! raw_json_messages {
    ($($(#[$doc:meta])* $message:ident,)*) => {$(
        $(#[$doc])*
        impl JsonValue for $message {
            fn to_json(&self) -> Result<Value, ProtobufError> {
                let $message { raw } = self;
                embedded_json(raw.as_deref())
            }

            fn from_json(value: &Value) -> Result<Self, ProtobufError> {
                Ok($message {
                    raw: embed_json(value)?,
                })
            }
        }
    )*};
}

raw_json_messages! {
    /// Managed-field sets: the JSON document itself (`{"f:metadata": {...}}`).
    FieldsV1,
    /// An embedded object in JSON (its `raw` bytes hold JSON, as Kubernetes writes them).
    RawExtension,
}
