//! Structural OpenAPI v3 schemas of custom resources: defaulting, pruning of unknown fields and
//! validation, with one field error per violation, worded as Kubernetes words them.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::registry::system_fields::strings;
use crate::strategy::{FieldError, FieldErrorKind};

const TYPES: &[&str] = &["object", "array", "string", "integer", "number", "boolean"];

/// Finds an obviously broken part of a schema (an unknown `type`), as a path suffix.
pub fn check_schema(schema: &Value) -> Option<String> {
    fn walk(s: &Value, path: String) -> Option<String> {
        let obj = s.as_object()?;
        if let Some(t) = obj.get("type") {
            if !t.as_str().is_some_and(|t| TYPES.contains(&t)) {
                return Some(format!("{path}.type"));
            }
        }
        if let Some(pattern) = obj.get("pattern").and_then(Value::as_str) {
            if regex::Regex::new(pattern).is_err() {
                return Some(format!("{path}.pattern"));
            }
        }
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                if let Some(bad) = walk(v, format!("{path}.properties[{k}]")) {
                    return Some(bad);
                }
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(sub) = obj.get(key).filter(|v| v.is_object()) {
                if let Some(bad) = walk(sub, format!("{path}.{key}")) {
                    return Some(bad);
                }
            }
        }
        None
    }
    walk(schema, String::new())
}

/// The schema of field (or map key) `name` of an object whose schema is `schema`: its property,
/// else its `additionalProperties` schema.
pub fn field_schema<'a>(schema: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    let s = schema?;
    s.get("properties")
        .and_then(|p| p.get(name))
        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
}

/// How a list merges and is owned, from `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// As a whole (`atomic`, no marker, or `map` without keys).
    Atomic,
    /// Unique scalars (`set`).
    Set,
    /// Items identified by these key fields (`map` with `x-kubernetes-list-map-keys`).
    Map(Vec<String>),
}

/// The list type `schema` gives an array.
pub fn list_type(schema: Option<&Value>) -> ListType {
    let marker = schema
        .and_then(|s| s.get("x-kubernetes-list-type"))
        .and_then(Value::as_str);
    match marker {
        Some("map") => {
            let keys = strings(schema.and_then(|s| s.get("x-kubernetes-list-map-keys")));
            if keys.is_empty() {
                ListType::Atomic
            } else {
                ListType::Map(keys)
            }
        }
        Some("set") => ListType::Set,
        _ => ListType::Atomic,
    }
}

fn preserves_unknown(schema: &Value) -> bool {
    schema["x-kubernetes-preserve-unknown-fields"] == true
}

/// Fills in `default`s of missing properties, recursively.
pub fn apply_defaults(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, sub) in props {
                    if !map.contains_key(k) {
                        if let Some(d) = sub.get("default") {
                            map.insert(k.clone(), d.clone());
                        }
                    }
                    if let Some(v) = map.get_mut(k) {
                        apply_defaults(v, sub);
                    }
                }
            }
            if let Some(sub) = schema.get("additionalProperties").filter(|s| s.is_object()) {
                for v in map.values_mut() {
                    apply_defaults(v, sub);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for v in items {
                    apply_defaults(v, sub);
                }
            }
        }
        _ => {}
    }
}

/// Removes fields the schema does not know (unless it preserves unknown fields) and returns
/// their paths. At the root, `apiVersion`, `kind` and `metadata` are always kept.
pub fn prune(value: &mut Value, schema: &Value, root: bool) -> Vec<String> {
    let mut pruned = Vec::new();
    prune_at(value, schema, root, "", &mut pruned);
    pruned
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn prune_at(value: &mut Value, schema: &Value, root: bool, path: &str, pruned: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|s| s.is_object());
            let keep_all = preserves_unknown(schema) || schema["additionalProperties"] == true;
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                if root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let sub = props.and_then(|p| p.get(&k)).or(additional);
                match sub {
                    Some(sub) => {
                        if let Some(v) = map.get_mut(&k) {
                            prune_at(v, sub, false, &join(path, &k), pruned);
                        }
                    }
                    None if keep_all => {}
                    None => {
                        map.remove(&k);
                        pruned.push(join(path, &k));
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for (i, v) in items.iter_mut().enumerate() {
                    prune_at(v, sub, false, &format!("{path}[{i}]"), pruned);
                }
            }
        }
        _ => {}
    }
}

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
    let mut errors = Vec::new();
    validate_at(value, schema, path, &mut errors);
    errors
}

fn invalid(path: &str, value: &Value, detail: String) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Invalid,
        field: path.to_string(),
        detail: format!("{}: {detail}", short(value)),
    }
}

fn validate_at(value: &Value, schema: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let Some(s) = schema.as_object() else { return };
    let shown = if path.is_empty() { "body" } else { path };
    if value.is_null() {
        if s.get("nullable") != Some(&Value::Bool(true)) && s.contains_key("type") {
            errors.push(invalid(
                path,
                value,
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
            errors.push(invalid(
                path,
                value,
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
                for (i, v) in items.iter().enumerate() {
                    validate_at(v, sub, &format!("{path}[{i}]"), errors);
                }
            }
        }
        Value::Object(map) => validate_object(map, s, path, errors),
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
            errors.push(FieldError {
                kind: FieldErrorKind::TooLong,
                field: path.into(),
                detail: format!("may not be more than {max} bytes"),
            });
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
            "date-time" => super::system_fields::parse_rfc3339(text).is_some(),
            "date" => {
                text.len() == 10
                    && super::system_fields::parse_rfc3339(&format!("{text}T00:00:00Z")).is_some()
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
            "hostname" => super::names::dns1123_subdomain_error(text).is_none(),
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
        if let Some(sub) = props.and_then(|p| p.get(k)) {
            validate_at(v, sub, &join(path, k), errors);
        } else if let Some(sub) = s.get("additionalProperties") {
            if sub.is_object() {
                validate_at(v, sub, &join(path, k), errors);
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
            errors.push(FieldError {
                kind: FieldErrorKind::TooMany,
                field: path.into(),
                detail: format!("{len}: must have at most {max} items"),
            });
        }
    }
}

#[cfg(test)]
mod tests;
