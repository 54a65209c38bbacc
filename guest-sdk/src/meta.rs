//! Object metadata: a typed `ObjectMeta` for typed strategies, accessors for `serde_json::Value`
//! objects, and Kubernetes' name validators.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The common part of `metadata`, keeping every field it does not name in `rest`.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::meta::ObjectMeta;
/// let m: ObjectMeta = serde_json::from_value(serde_json::json!({
///     "name": "web", "namespace": "default", "labels": {"app": "web"}, "uid": "u1"
/// })).unwrap();
/// assert_eq!(m.labels["app"], "web");
/// assert_eq!(m.rest["uid"], "u1");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// `metadata.name`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `metadata.namespace`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `metadata.labels`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Every other metadata field, kept as is.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `metadata.name` of an object, if set.
///
/// # Examples
///
/// ```
/// let obj = serde_json::json!({"metadata": {"name": "web"}});
/// assert_eq!(strategy_guest_sdk::meta::name(&obj), Some("web"));
/// ```
pub fn name(obj: &Value) -> Option<&str> {
    obj.get("metadata")?.get("name")?.as_str()
}

/// `metadata.namespace` of an object, if set.
///
/// # Examples
///
/// ```
/// let obj = serde_json::json!({"metadata": {"namespace": "team-a"}});
/// assert_eq!(strategy_guest_sdk::meta::namespace(&obj), Some("team-a"));
/// ```
pub fn namespace(obj: &Value) -> Option<&str> {
    obj.get("metadata")?.get("namespace")?.as_str()
}

/// `metadata.labels` of an object (empty when unset; non-string values are skipped).
///
/// # Examples
///
/// ```
/// let obj = serde_json::json!({"metadata": {"labels": {"app": "web"}}});
/// assert_eq!(strategy_guest_sdk::meta::labels(&obj)["app"], "web");
/// ```
pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    string_map(obj.get("metadata").and_then(|m| m.get("labels")))
}

/// A JSON object of strings as a map (empty when absent; non-string values are skipped).
///
/// # Examples
///
/// ```
/// let v = serde_json::json!({"a": "1", "b": 2});
/// assert_eq!(strategy_guest_sdk::meta::string_map(Some(&v)).len(), 1);
/// ```
pub fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Sets `metadata.labels[key] = value`, creating `metadata` and `labels` as needed.
///
/// # Examples
///
/// ```
/// let mut obj = serde_json::json!({});
/// strategy_guest_sdk::meta::set_label(&mut obj, "app", "web");
/// assert_eq!(obj["metadata"]["labels"]["app"], "web");
/// ```
pub fn set_label(obj: &mut Value, key: &str, value: &str) {
    metadata_map(obj, "labels").insert(key.to_owned(), Value::String(value.to_owned()));
}

/// `metadata.annotations[key]` of an object, if set to a string.
///
/// # Examples
///
/// ```
/// let obj = serde_json::json!({"metadata": {"annotations": {"example.com/owner": "alice"}}});
/// assert_eq!(strategy_guest_sdk::meta::annotation(&obj, "example.com/owner"), Some("alice"));
/// assert_eq!(strategy_guest_sdk::meta::annotation(&obj, "example.com/other"), None);
/// ```
pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj["metadata"]["annotations"][key].as_str()
}

/// Sets `metadata.annotations[key] = value`, creating `metadata` and `annotations` as needed.
///
/// # Examples
///
/// ```
/// let mut obj = serde_json::json!({"metadata": {"name": "web"}});
/// strategy_guest_sdk::meta::set_annotation(&mut obj, "example.com/owner", "alice");
/// assert_eq!(obj["metadata"]["annotations"]["example.com/owner"], "alice");
/// ```
pub fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    metadata_map(obj, "annotations").insert(key.to_owned(), Value::String(value.to_owned()));
}

/// Removes `metadata.annotations[key]`, and `annotations` itself when that leaves it empty.
///
/// # Examples
///
/// ```
/// let mut obj = serde_json::json!({"metadata": {"annotations": {"example.com/owner": "alice"}}});
/// strategy_guest_sdk::meta::remove_annotation(&mut obj, "example.com/owner");
/// assert_eq!(obj, serde_json::json!({"metadata": {}}));
/// ```
pub fn remove_annotation(obj: &mut Value, key: &str) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.remove(key);
        if annotations.is_empty() {
            meta.remove("annotations");
        }
    }
}

/// `metadata.<field>` as a JSON object, replacing whatever is not an object on the way
/// (`obj` itself, `metadata`, the field).
fn metadata_map<'a>(obj: &'a mut Value, field: &str) -> &'a mut Map<String, Value> {
    fn object(v: &mut Value) -> &mut Map<String, Value> {
        if !v.is_object() {
            *v = Value::Object(Map::new());
        }
        v.as_object_mut().expect("an object")
    }
    let meta = object(obj).entry("metadata").or_insert(Value::Null);
    object(object(meta).entry(field).or_insert(Value::Null))
}

/// Problems with a DNS-1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters);
/// empty when valid.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::meta::dns1123_label_errors;
/// assert!(dns1123_label_errors("web-1").is_empty());
/// assert!(!dns1123_label_errors("Web_1").is_empty());
/// ```
pub fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_owned());
    }
    let b = value.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let ok = !b.is_empty()
        && alnum(&b[0])
        && alnum(&b[b.len() - 1])
        && b.iter().all(|c| alnum(c) || *c == b'-');
    if !ok {
        errs.push(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character"
                .to_owned(),
        );
    }
    errs
}

/// Problems with a ConfigMap/Secret key (`[-._a-zA-Z0-9]+`, at most 253 characters, not `.` or
/// `..`); empty when valid.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::meta::config_map_key_errors;
/// assert!(config_map_key_errors("app.properties").is_empty());
/// assert!(!config_map_key_errors("a/b").is_empty());
/// ```
pub fn config_map_key_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push("must be no more than 253 characters".to_owned());
    }
    let valid_chars = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !valid_chars {
        errs.push(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
                .to_owned(),
        );
    }
    if value == "." || value == ".." {
        errs.push(format!("must not be '{value}'"));
    }
    errs
}
