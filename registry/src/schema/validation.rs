//! Validation of a custom resource against its structural schema, one field error per
//! violation worded as Kubernetes words it; on update, ratcheted: a value unchanged from the
//! old object is not refused by a rule the old object was already allowed to break.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::{join, list_type, ListType};
use crate::strategy::{FieldError, FieldErrorKind};

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn short(v: &Value) -> String {
    match v {
        Value::Object(_) => "\"object\"".into(),
        Value::Array(_) => "\"array\"".into(),
        other => other.to_string(),
    }
}

/// The compiled regex of a schema `pattern`, from a cache shared by every request (compiling
/// one per validated string cost more than the rest of validating a Gateway). The cache is
/// emptied when it holds too many, so hostile definitions cannot grow it without bound.
fn compiled_pattern(pattern: &str) -> Option<std::sync::Arc<regex::Regex>> {
    use std::collections::HashMap;
    use std::sync::{Arc, LazyLock, RwLock};
    const MAX_PATTERNS: usize = 4096;
    static PATTERNS: LazyLock<RwLock<HashMap<String, Arc<regex::Regex>>>> =
        LazyLock::new(RwLock::default);
    if let Some(re) = PATTERNS
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(pattern)
    {
        return Some(re.clone());
    }
    let re = Arc::new(regex::Regex::new(pattern).ok()?);
    let mut cache = PATTERNS.write().unwrap_or_else(|p| p.into_inner());
    if cache.len() >= MAX_PATTERNS {
        cache.clear();
    }
    cache.insert(pattern.to_string(), re.clone());
    Some(re)
}

/// Validates `value` against `schema`; field paths start at `path` (empty at the root).
pub fn validate(value: &Value, schema: &Value, path: &str) -> Vec<FieldError> {
    validate_update(value, None, schema, path)
}

/// Validates an update of `old` to `value` with ratcheting (Kubernetes'
/// `CRDValidationRatcheting`): a value equal to its correlated old value — same property, same
/// map key, the `x-kubernetes-list-type: map` item with the same keys, the same `set` member —
/// is not validated again, so an object that a tightened schema would refuse can still change
/// elsewhere (labels, finalizers). Items of atomic lists have no correlated old value.
pub fn validate_update(
    value: &Value,
    old: Option<&Value>,
    schema: &Value,
    path: &str,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    validate_at(value, old, schema, path, &mut errors);
    errors
}

/// The item of `old` (a list of list type `kind`) that `item` is the new value of.
fn correlated_item<'a>(kind: &ListType, old: &'a [Value], item: &Value) -> Option<&'a Value> {
    match kind {
        ListType::Atomic => None,
        ListType::Set => old.iter().find(|o| *o == item),
        ListType::Map(keys) => old
            .iter()
            .find(|o| keys.iter().all(|k| o.get(k) == item.get(k))),
    }
}

fn invalid(path: &str, value: &Value, detail: String) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Invalid,
        field: path.to_string(),
        detail: format!("{}: {detail}", short(value)),
    }
}

/// A member of the wrong type (Kubernetes' `field.TypeInvalid`, whose value is the type found,
/// as kube-openapi reports it: `Invalid value: "string": spec.replicas in body must be of type
/// integer: "string"`).
fn type_invalid(path: &str, found: &str, detail: String) -> FieldError {
    FieldError {
        kind: FieldErrorKind::TypeInvalid,
        ..invalid(path, &Value::String(found.to_owned()), detail)
    }
}

fn validate_at(
    value: &Value,
    old: Option<&Value>,
    schema: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(s) = schema.as_object() else { return };
    if old == Some(value) {
        return;
    }
    let shown = if path.is_empty() { "body" } else { path };
    if value.is_null() {
        if s.get("nullable") != Some(&Value::Bool(true)) && s.contains_key("type") {
            errors.push(type_invalid(
                path,
                "null",
                format!(
                    "{shown} in body must be of type {}: \"null\"",
                    s["type"].as_str().unwrap_or("object")
                ),
            ));
        }
        return;
    }
    let int_or_string = s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        let actual = type_name(value);
        let ok = actual == t
            || (t == "number" && actual == "integer")
            || (int_or_string && matches!(actual, "integer" | "string"));
        if !ok {
            errors.push(type_invalid(
                path,
                actual,
                format!("{shown} in body must be of type {t}: \"{actual}\""),
            ));
            return;
        }
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            let list: Vec<String> = options.iter().map(Value::to_string).collect();
            errors.push(FieldError {
                kind: FieldErrorKind::NotSupported,
                field: path.into(),
                detail: format!("{}: supported values: {}", short(value), list.join(", ")),
            });
        }
    }
    match value {
        Value::String(text) => validate_string(text, value, s, path, shown, errors),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or_default();
            // The bound, its exclusive flag, the word for the allowed side, and where `x` may not be.
            for (bound, exclusive_key, op, outside) in [
                (
                    "minimum",
                    "exclusiveMinimum",
                    "greater than",
                    Ordering::Less,
                ),
                (
                    "maximum",
                    "exclusiveMaximum",
                    "less than",
                    Ordering::Greater,
                ),
            ] {
                let Some(limit) = s.get(bound).and_then(Value::as_f64) else {
                    continue;
                };
                let exclusive = s.get(exclusive_key) == Some(&Value::Bool(true));
                let side = x.partial_cmp(&limit);
                if side == Some(outside) || (exclusive && side == Some(Ordering::Equal)) {
                    let op = if exclusive {
                        op.to_string()
                    } else {
                        format!("{op} or equal to")
                    };
                    errors.push(invalid(
                        path,
                        value,
                        format!("{shown} in body should be {op} {}", s[bound]),
                    ));
                }
            }
            if let Some(fmt) = s.get("format").and_then(Value::as_str) {
                let fits = match fmt {
                    "int32" => n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
                    "int64" => n.as_i64().is_some(),
                    _ => true,
                };
                if !fits {
                    errors.push(invalid(
                        path,
                        value,
                        format!("{shown} in body must be of type {fmt}"),
                    ));
                }
            }
        }
        Value::Array(items) => {
            if let Some(min) = s.get("minItems").and_then(Value::as_u64) {
                if (items.len() as u64) < min {
                    errors.push(invalid(
                        path,
                        value,
                        format!("{shown} in body should have at least {min} items"),
                    ));
                }
            }
            too_many(s, "maxItems", items.len(), path, errors);
            if let Some(sub) = s.get("items") {
                let kind = list_type(Some(schema));
                let old_items = old.and_then(Value::as_array).map(Vec::as_slice);
                for (i, v) in items.iter().enumerate() {
                    let was = old_items.and_then(|o| correlated_item(&kind, o, v));
                    validate_at(v, was, sub, &format!("{path}[{i}]"), errors);
                }
            }
        }
        Value::Object(map) => validate_object(map, old, s, path, errors),
        _ => {}
    }
}

fn validate_string(
    text: &str,
    value: &Value,
    s: &Map<String, Value>,
    path: &str,
    shown: &str,
    errors: &mut Vec<FieldError>,
) {
    let len = text.chars().count() as u64;
    if let Some(min) = s.get("minLength").and_then(Value::as_u64) {
        if len < min {
            errors.push(invalid(
                path,
                value,
                format!("{shown} in body should be at least {min} chars long"),
            ));
        }
    }
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
        if len > max {
            errors.push(FieldError::too_long(path, max));
        }
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str) {
        if let Some(re) = compiled_pattern(pattern) {
            if !re.is_match(text) {
                errors.push(invalid(
                    path,
                    value,
                    format!("{shown} in body should match '{pattern}'"),
                ));
            }
        }
    }
    if let Some(fmt) = s.get("format").and_then(Value::as_str) {
        let ok = match fmt {
            "date-time" => crate::system_fields::parse_rfc3339(text).is_some(),
            "date" => {
                text.len() == 10
                    && crate::system_fields::parse_rfc3339(&format!("{text}T00:00:00Z")).is_some()
            }
            "byte" => {
                base64::Engine::decode(&base64::engine::general_purpose::STANDARD, text).is_ok()
            }
            "uuid" => {
                text.len() == 36
                    && text.chars().enumerate().all(|(i, c)| {
                        if matches!(i, 8 | 13 | 18 | 23) {
                            c == '-'
                        } else {
                            c.is_ascii_hexdigit()
                        }
                    })
            }
            "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
            "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
            "hostname" => crate::names::dns1123_subdomain_error(text).is_none(),
            "email" => text
                .split_once('@')
                .is_some_and(|(a, b)| !a.is_empty() && b.contains('.')),
            _ => true,
        };
        if !ok {
            errors.push(invalid(
                path,
                value,
                format!("{shown} in body must be of type {fmt}: {value}"),
            ));
        }
    }
}

fn validate_object(
    map: &Map<String, Value>,
    old: Option<&Value>,
    s: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if let Some(required) = s.get("required").and_then(Value::as_array) {
        for r in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(r) {
                errors.push(FieldError {
                    kind: FieldErrorKind::Required,
                    field: join(path, r),
                    detail: String::new(),
                });
            }
        }
    }
    let props = s.get("properties").and_then(Value::as_object);
    for (k, v) in map {
        if path.is_empty() && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let was = old.and_then(|o| o.get(k));
        if let Some(sub) = props.and_then(|p| p.get(k)) {
            validate_at(v, was, sub, &join(path, k), errors);
        } else if let Some(sub) = s.get("additionalProperties") {
            if sub.is_object() {
                validate_at(v, was, sub, &join(path, k), errors);
            }
        }
    }
    if let Some(min) = s.get("minProperties").and_then(Value::as_u64) {
        if (map.len() as u64) < min {
            errors.push(invalid(
                path,
                &Value::Object(map.clone()),
                format!("should have at least {min} properties"),
            ));
        }
    }
    too_many(s, "maxProperties", map.len(), path, errors);
}

/// `maxItems` or `maxProperties` (`key`): TooMany when the list or map at `path` holds more
/// than the bound (Kubernetes says "items" for both).
fn too_many(
    s: &Map<String, Value>,
    key: &str,
    len: usize,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if let Some(max) = s.get(key).and_then(Value::as_u64) {
        if len as u64 > max {
            errors.push(FieldError::too_many(path, len as u64, max));
        }
    }
}
