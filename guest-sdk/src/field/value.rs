//! A field error's bad value, rendered as Kubernetes' `field.Error` renders a Go value, so a
//! Rust module and a Go module (and kube-apiserver) word the same mistake the same way.
//!
//! The rules are Go's: a string quoted as `strconv.Quote` quotes it, a number as `%v` prints it
//! (`-1`, `0.5`, `1e+06`), `null` for nothing, and a map of strings as `%#v` prints a
//! `map[string]string` (`map[string]string{"app":"web"}`). Anything else is compact JSON, the
//! one rendering both SDKs share for objects and lists (Go would print its own struct syntax).

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write};

use serde::Serialize;
use serde_json::Value;

/// The value a field error reports (Kubernetes' `BadValue`), already rendered.
///
/// Made with `.into()` from the field's value: integers, floats, `bool`, strings, `Option`s of
/// them (`None` is `null`), a [`serde_json::Value`], or a map of strings; any other serializable
/// value with [`FieldValue::json`].
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use strategy_guest_sdk::FieldValue;
///
/// assert_eq!(FieldValue::from(-1).to_string(), "-1");
/// assert_eq!(FieldValue::from("eu-west").to_string(), r#""eu-west""#);
/// assert_eq!(FieldValue::from(1_000_000.0).to_string(), "1e+06");
/// assert_eq!(FieldValue::from(None::<i64>).to_string(), "null");
/// let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
/// assert_eq!(FieldValue::from(&labels).to_string(), r#"map[string]string{"app":"web"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldValue(String);

impl FieldValue {
    /// Any serializable value, as compact JSON (scalars as the other conversions render them).
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::FieldValue;
    /// let v = FieldValue::json(&serde_json::json!({"matchLabels": {"app": "web"}}));
    /// assert_eq!(v.to_string(), r#"{"matchLabels":{"app":"web"}}"#);
    /// ```
    pub fn json(value: &impl Serialize) -> Self {
        match serde_json::to_value(value) {
            Ok(v) => Self::from(&v),
            Err(e) => Self(format!("<{e}>")),
        }
    }
}

impl fmt::Display for FieldValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

macro_rules! decimal {
    ($($t:ty),*) => {$(
        impl From<$t> for FieldValue {
            fn from(n: $t) -> Self {
                Self(n.to_string())
            }
        }
    )*};
}
decimal!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, bool);

impl From<f64> for FieldValue {
    fn from(x: f64) -> Self {
        Self(go_float(x.is_nan(), x.is_infinite(), &format!("{x:e}")))
    }
}

impl From<f32> for FieldValue {
    fn from(x: f32) -> Self {
        Self(go_float(x.is_nan(), x.is_infinite(), &format!("{x:e}")))
    }
}

impl From<&str> for FieldValue {
    fn from(s: &str) -> Self {
        Self(go_quote(s))
    }
}

impl From<String> for FieldValue {
    fn from(s: String) -> Self {
        Self(go_quote(&s))
    }
}

impl From<&String> for FieldValue {
    fn from(s: &String) -> Self {
        Self(go_quote(s))
    }
}

impl<T: Into<FieldValue>> From<Option<T>> for FieldValue {
    fn from(v: Option<T>) -> Self {
        v.map_or_else(|| Self("null".into()), Into::into)
    }
}

impl From<&Value> for FieldValue {
    fn from(v: &Value) -> Self {
        match v {
            Value::Null => Self("null".into()),
            Value::Bool(b) => Self::from(*b),
            Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => Self::from(i),
                (_, Some(u), _) => Self::from(u),
                (_, _, Some(x)) => Self::from(x),
                _ => Self(n.to_string()),
            },
            Value::String(s) => Self(go_quote(s)),
            composite => Self(composite.to_string()),
        }
    }
}

impl From<Value> for FieldValue {
    fn from(v: Value) -> Self {
        Self::from(&v)
    }
}

impl From<&BTreeMap<String, String>> for FieldValue {
    fn from(map: &BTreeMap<String, String>) -> Self {
        Self(go_string_map(map.iter()))
    }
}

impl From<&HashMap<String, String>> for FieldValue {
    fn from(map: &HashMap<String, String>) -> Self {
        // Go's fmt prints a map's entries sorted by key.
        Self(go_string_map(
            map.iter().collect::<BTreeMap<_, _>>().into_iter(),
        ))
    }
}

/// `%#v` of a `map[string]string`: `map[string]string{"a":"1", "b":"2"}`.
fn go_string_map<'a>(entries: impl Iterator<Item = (&'a String, &'a String)>) -> String {
    let entries: Vec<String> = entries
        .map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v)))
        .collect();
    format!("map[string]string{{{}}}", entries.join(", "))
}

/// Go's `strconv.Quote`: printable characters as they are, the rest escaped.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        let code = c as u32;
        let _ = match c {
            '"' => out.write_str("\\\""),
            '\\' => out.write_str("\\\\"),
            '\u{7}' => out.write_str("\\a"),
            '\u{8}' => out.write_str("\\b"),
            '\u{c}' => out.write_str("\\f"),
            '\n' => out.write_str("\\n"),
            '\r' => out.write_str("\\r"),
            '\t' => out.write_str("\\t"),
            '\u{b}' => out.write_str("\\v"),
            _ if code < 0x20 || code == 0x7f => write!(out, "\\x{code:02x}"),
            _ if go_printable(c) => out.write_char(c),
            _ if code < 0x10000 => write!(out, "\\u{code:04x}"),
            _ => write!(out, "\\U{code:08x}"),
        };
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint` for assigned characters: letters, marks, numbers, punctuation,
/// symbols and the ASCII space; not controls, other spaces, format characters or private use.
/// (Unassigned code points, which Go also escapes, print as they are.)
fn go_printable(c: char) -> bool {
    const FORMAT_OR_PRIVATE: &[(u32, u32)] = &[
        (0x00ad, 0x00ad),
        (0x0600, 0x0605),
        (0x061c, 0x061c),
        (0x06dd, 0x06dd),
        (0x070f, 0x070f),
        (0x180e, 0x180e),
        (0x200b, 0x200f),
        (0x202a, 0x202e),
        (0x2060, 0x2064),
        (0x2066, 0x206f),
        (0xe000, 0xf8ff),
        (0xfeff, 0xfeff),
        (0xfff9, 0xfffb),
        (0xfffe, 0xffff),
        (0xe0001, 0xe0001),
        (0xe0020, 0xe007f),
        (0xf0000, 0x10ffff),
    ];
    let code = c as u32;
    !(c.is_control()
        || (c.is_whitespace() && c != ' ')
        || FORMAT_OR_PRIVATE
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&code)))
}

/// Go's `%v` of a float from its shortest digits (`{:e}`: `-1.5e3`): `%e` form when the
/// exponent is below -4 or at least 6 (`1e+06`, `1.5e-05`), plain digits otherwise.
fn go_float(nan: bool, infinite: bool, scientific: &str) -> String {
    let negative = scientific.starts_with('-');
    if nan {
        return "NaN".into();
    }
    if infinite {
        return if negative { "-Inf" } else { "+Inf" }.into();
    }
    let unsigned = scientific.trim_start_matches('-');
    let (mantissa, exponent) = unsigned.split_once('e').unwrap_or((unsigned, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exp: i32 = exponent.parse().unwrap_or(0);
    let mut out = String::from(if negative { "-" } else { "" });
    if !(-4..6).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else if exp < 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-exp - 1) as usize));
        out.push_str(&digits);
    } else {
        let whole = exp as usize + 1;
        if digits.len() <= whole {
            out.push_str(&digits);
            out.push_str(&"0".repeat(whole - digits.len()));
        } else {
            out.push_str(&digits[..whole]);
            out.push('.');
            out.push_str(&digits[whole..]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The renderings both SDKs must agree on, with Go's own output for each (the Go SDK's
    /// tests read the same file).
    #[test]
    fn values_render_as_the_shared_table_says() {
        let table: Vec<Value> =
            serde_json::from_str(include_str!("../../testdata/field_values.json")).unwrap();
        for case in table {
            let expected = case["rendered"].as_str().unwrap();
            let got = if let Some(x) = case.get("float32") {
                FieldValue::from(x.as_f64().unwrap() as f32)
            } else if let Some(map) = case.get("stringMap") {
                let map: BTreeMap<String, String> = serde_json::from_value(map.clone()).unwrap();
                FieldValue::from(&map)
            } else {
                FieldValue::from(&case["value"])
            };
            assert_eq!(got.to_string(), expected, "{case}");
        }
    }
}
