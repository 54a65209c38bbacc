//! Core `v1` Secrets as Kubernetes treats them: `type` defaults to `Opaque` and never changes;
//! `stringData` is folded into `data` (base64) on every write; keys follow ConfigMap key rules;
//! the decoded total is capped at 1 MiB; each well-known type requires its keys; an
//! `immutable` Secret keeps its data.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{Map, Value};
use strategy_guest_sdk::meta::config_map_key_errors;
use strategy_guest_sdk::{FieldError, FieldPath};

use super::KindStrategy;

/// The largest total size of a Secret's data, as in Kubernetes.
pub(crate) const MAX_SECRET_SIZE: usize = 1 << 20;

/// What a field error shows in place of a Secret's data, as kube-apiserver does.
const REDACTED: &str = "<secret contents redacted>";
const IMMUTABLE: &str = "field is immutable when `immutable` is set";

pub(crate) struct Secrets;

fn data(obj: &Value) -> Map<String, Value> {
    obj.get("data")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn secret_type(obj: &Value) -> &str {
    obj.get("type").and_then(Value::as_str).unwrap_or("Opaque")
}

/// The keys each well-known type requires (all of them, or with `any`, at least one).
fn required_keys(type_: &str) -> (&'static [&'static str], bool) {
    match type_ {
        "kubernetes.io/dockercfg" => (&[".dockercfg"], false),
        "kubernetes.io/dockerconfigjson" => (&[".dockerconfigjson"], false),
        "kubernetes.io/basic-auth" => (&["username", "password"], true),
        "kubernetes.io/ssh-auth" => (&["ssh-privatekey"], false),
        "kubernetes.io/tls" => (&["tls.crt", "tls.key"], false),
        _ => (&[], false),
    }
}

impl KindStrategy for Secrets {
    fn prepares(&self) -> bool {
        true
    }

    fn prepare(&self, obj: &mut Value) {
        let Some(map) = obj.as_object_mut() else {
            return;
        };
        if map.get("type").is_none_or(|t| t.as_str() == Some("")) {
            map.insert("type".into(), "Opaque".into());
        }
        if let Some(Value::Object(string_data)) = map.remove("stringData") {
            let data = map
                .entry("data")
                .or_insert_with(|| Value::Object(Map::new()));
            if !data.is_object() {
                *data = Value::Object(Map::new());
            }
            if let Some(data) = data.as_object_mut() {
                for (k, v) in string_data {
                    let text = v
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| v.to_string());
                    data.insert(k, STANDARD.encode(text).into());
                }
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let data_path = FieldPath::new("data");
        let entries = data(obj);
        let mut total = 0;
        for (key, value) in &entries {
            for msg in config_map_key_errors(key) {
                errs.push(FieldError::invalid(&data_path.key(key), key, msg));
            }
            match value.as_str().map(|v| STANDARD.decode(v)) {
                Some(Ok(bytes)) => total += key.len() + bytes.len(),
                _ => errs.push(FieldError::invalid(
                    &data_path.key(key),
                    REDACTED,
                    "must be a base64-encoded string",
                )),
            }
        }
        if total > MAX_SECRET_SIZE {
            errs.push(FieldError::too_long(&data_path, MAX_SECRET_SIZE));
        }
        let type_ = secret_type(obj);
        if type_ == "kubernetes.io/service-account-token" {
            let name = obj
                .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if name.is_empty() {
                errs.push(FieldError::required(
                    &FieldPath::new("metadata")
                        .child("annotations")
                        .key("kubernetes.io/service-account.name"),
                    "",
                ));
            }
        }
        let (keys, any) = required_keys(type_);
        let missing: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|k| !entries.contains_key(*k))
            .collect();
        if (any && missing.len() == keys.len()) || (!any && !missing.is_empty()) {
            for k in missing {
                errs.push(FieldError::required(&data_path.key(k), ""));
            }
        }
        for key in [".dockercfg", ".dockerconfigjson"] {
            let wanted = format!("kubernetes.io/{}", key.trim_start_matches('.'));
            if type_ != wanted {
                continue;
            }
            let parsed = entries
                .get(key)
                .and_then(Value::as_str)
                .and_then(|v| STANDARD.decode(v).ok())
                .map(|bytes| serde_json::from_slice::<Value>(&bytes).is_ok());
            if parsed == Some(false) {
                errs.push(FieldError::invalid(
                    &data_path.key(key),
                    REDACTED,
                    "invalid character in the JSON: the value must be valid JSON",
                ));
            }
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        if secret_type(new) != secret_type(old) {
            errs.push(FieldError::immutable(
                &FieldPath::new("type"),
                secret_type(new),
            ));
        }
        if old.get("immutable") == Some(&Value::Bool(true)) {
            if new.get("immutable") != Some(&Value::Bool(true)) {
                errs.push(FieldError::forbidden(
                    &FieldPath::new("immutable"),
                    IMMUTABLE,
                ));
            }
            if data(new) != data(old) {
                errs.push(FieldError::forbidden(&FieldPath::new("data"), IMMUTABLE));
            }
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use strategy_guest_sdk::FieldErrorKind;

    use super::*;

    #[test]
    fn string_data_is_folded_into_data_and_type_defaults() {
        let mut s = json!({"metadata": {"name": "a"}, "stringData": {"user": "admin"}, "data": {"old": "eA=="}});
        Secrets.prepare(&mut s);
        assert_eq!(s["type"], "Opaque");
        assert_eq!(s["data"]["user"], "YWRtaW4=");
        assert_eq!(s["data"]["old"], "eA==");
        assert!(s.get("stringData").is_none());
        assert!(Secrets.validate(&s).is_empty());
    }

    #[test]
    fn typed_secrets_require_their_keys() {
        let tls = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}});
        let errs = Secrets.validate(&tls);
        assert_eq!(errs.len(), 1);
        assert_eq!(
            (errs[0].kind, errs[0].field.as_str()),
            (FieldErrorKind::Required, "data[tls.key]")
        );
        let basic = json!({"type": "kubernetes.io/basic-auth", "data": {"password": "eA=="}});
        assert!(
            Secrets.validate(&basic).is_empty(),
            "one of username/password suffices"
        );
        let token = json!({"type": "kubernetes.io/service-account-token"});
        assert_eq!(
            Secrets.validate(&token)[0].field,
            "metadata.annotations[kubernetes.io/service-account.name]"
        );
        let bad_json = json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": STANDARD.encode("{nope")}});
        assert_eq!(Secrets.validate(&bad_json)[0].kind, FieldErrorKind::Invalid);
    }

    #[test]
    fn keys_values_and_size_are_checked() {
        let bad = json!({"data": {"a/b": "eA==", "ok": "***"}});
        let fields: Vec<String> = Secrets
            .validate(&bad)
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(fields, ["data[a/b]", "data[ok]"]);
        let big = json!({"data": {"k": STANDARD.encode(vec![0u8; MAX_SECRET_SIZE])}});
        assert_eq!(Secrets.validate(&big)[0].kind, FieldErrorKind::TooLong);
    }

    #[test]
    fn type_and_immutable_data_do_not_change() {
        let old = json!({"type": "Opaque", "immutable": true, "data": {"a": "eA=="}});
        let retyped = json!({"type": "kubernetes.io/ssh-auth", "immutable": true, "data": {"a": "eA==", "ssh-privatekey": "eA=="}});
        let fields: Vec<String> = Secrets
            .validate_update(&retyped, &old)
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(fields, ["type", "data"]);
        let relabelled = json!({"metadata": {"labels": {"x": "y"}}, "type": "Opaque", "immutable": true, "data": {"a": "eA=="}});
        assert!(Secrets.validate_update(&relabelled, &old).is_empty());
    }
}
