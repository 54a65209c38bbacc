//! Kubernetes' name and metadata validation rules: DNS-1123 names, qualified label keys, label
//! values and annotation sizes, plus generateName suffixes.

use rand::Rng as _;
use serde_json::Value;

use crate::strategy::{FieldError, FieldErrorKind};

/// Longest DNS-1123 subdomain.
const SUBDOMAIN_MAX: usize = 253;
/// Longest DNS-1123 label (and label name part and value).
const LABEL_MAX: usize = 63;
/// The most bytes all annotations of an object may take together.
const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;
/// The characters generateName suffixes are drawn from (Kubernetes' alphabet, no vowels).
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `prefix` plus 5 random characters, as Kubernetes' `SimpleNameGenerator` makes them.
pub fn generate_name(prefix: &str) -> String {
    let mut rng = rand::rng();
    let prefix = if prefix.len() > SUBDOMAIN_MAX - 5 {
        &prefix[..SUBDOMAIN_MAX - 5]
    } else {
        prefix
    };
    let suffix: String = (0..5)
        .map(|_| SUFFIX_ALPHABET[rng.random_range(0..SUFFIX_ALPHABET.len())] as char)
        .collect();
    format!("{prefix}{suffix}")
}

fn is_alnum_lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Why `name` is not a DNS-1123 label, if it is not.
pub fn dns1123_label_error(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= LABEL_MAX
        && name.chars().all(|c| is_alnum_lower(c) || c == '-')
        && name.starts_with(is_alnum_lower)
        && name.ends_with(is_alnum_lower);
    (!ok).then(|| {
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
         and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', \
         regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            .to_string()
    })
}

/// Why `name` is not a DNS-1035 label (a Service's name: it must start with a letter), if it
/// is not.
pub fn dns1035_label_error(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= LABEL_MAX
        && name.chars().all(|c| is_alnum_lower(c) || c == '-')
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.ends_with(is_alnum_lower);
    (!ok).then(|| {
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with \
         an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or \
         'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            .to_string()
    })
}

/// Why `name` is not a valid path segment (Kubernetes' `path.IsValidPathSegmentName`, the
/// name rule of the RBAC kinds, whose names such as `system:basic-user` carry colons).
pub fn path_segment_name_error(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("may not be '{name}'"));
    }
    let errors: Vec<String> = ["/", "%"]
        .iter()
        .filter(|bad| name.contains(**bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect();
    (!errors.is_empty()).then(|| errors.join(", "))
}

/// Why `name` is not a valid name for an object of `group`/`plural`: namespaces are DNS-1123
/// labels, Services DNS-1035 labels, the RBAC kinds path segments, IPAddresses anything (their
/// strategy wants an address), APIServices `<version>.<group>` (`v1.` for the core
/// group), everything else DNS-1123 subdomains.
pub fn object_name_error(group: &str, plural: &str, name: &str) -> Option<String> {
    match (group, plural) {
        ("", "namespaces") => dns1123_label_error(name),
        ("rbac.authorization.k8s.io", _) => path_segment_name_error(name),
        ("", "services") => dns1035_label_error(name),
        // An address, checked by the kind's strategy (IPv6 has colons).
        ("networking.k8s.io", "ipaddresses") => None,
        ("apiregistration.k8s.io", "apiservices") => {
            (!name.contains('.')).then(|| "must be in the form: <version>.<group>".to_string())
        }
        _ => dns1123_subdomain_error(name),
    }
}

/// Why `name` is not a DNS-1123 subdomain, if it is not.
pub fn dns1123_subdomain_error(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= SUBDOMAIN_MAX
        && name.split('.').all(|part| {
            !part.is_empty()
                && part.chars().all(|c| is_alnum_lower(c) || c == '-')
                && part.starts_with(is_alnum_lower)
                && part.ends_with(is_alnum_lower)
        });
    (!ok).then(|| {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' \
         or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex \
         used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            .to_string()
    })
}

/// A label name part or label value: alphanumerics, `-`, `_`, `.`, starting and ending with an
/// alphanumeric.
fn is_qualified_part(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= LABEL_MAX
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// Why `key` is not a qualified name (`[prefix/]name`), if it is not.
pub fn qualified_name_error(key: &str) -> Option<String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        if dns1123_subdomain_error(p).is_some() {
            return Some("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".into());
        }
    }
    (!is_qualified_part(name)).then(|| {
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and \
         end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex \
         used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            .to_string()
    })
}

/// Why `metadata` does not have the shape of Kubernetes' `ObjectMeta` (string fields, maps of
/// strings, a list of strings), if it does not: what Kubernetes refuses when decoding (400).
pub fn metadata_shape_error(obj: &Value) -> Option<String> {
    let meta = obj.get("metadata")?;
    let Some(meta) = meta.as_object() else {
        return Some("metadata must be an object".into());
    };
    for field in [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
    ] {
        if meta
            .get(field)
            .is_some_and(|v| !v.is_string() && !v.is_null())
        {
            return Some(format!("metadata.{field} must be a string"));
        }
    }
    for field in ["labels", "annotations"] {
        match meta.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) if m.values().all(Value::is_string) => {}
            Some(_) => return Some(format!("metadata.{field} must be a map of strings")),
        }
    }
    match meta.get("finalizers") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => None,
        Some(_) => Some("metadata.finalizers must be a list of strings".into()),
    }
}

/// `metadata.<field>` of `obj` when it is a map; when it is something else, the error saying
/// so is added to `errors` (absent and `null` are no error).
fn metadata_map<'a>(
    obj: &'a Value,
    field: &str,
    errors: &mut Vec<FieldError>,
) -> Option<&'a serde_json::Map<String, Value>> {
    match obj.get("metadata")?.get(field)? {
        Value::Null => None,
        Value::Object(map) => Some(map),
        other => {
            errors.push(FieldError {
                kind: FieldErrorKind::Invalid,
                field: format!("metadata.{field}"),
                detail: format!("{other}: must be a map of strings"),
            });
            None
        }
    }
}

/// Validates `metadata.labels`, `metadata.annotations` and `metadata.finalizers` of `obj`.
pub fn validate_labels_and_annotations(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let invalid = |field: String, detail: String| FieldError {
        kind: FieldErrorKind::Invalid,
        field,
        detail,
    };
    if let Some(labels) = metadata_map(obj, "labels", &mut errors) {
        for (k, v) in labels {
            if let Some(why) = qualified_name_error(k) {
                errors.push(invalid("metadata.labels".into(), format!("{k:?}: {why}")));
            }
            match v.as_str() {
                Some(s) if s.is_empty() || is_qualified_part(s) => {}
                _ => errors.push(invalid(
                    "metadata.labels".to_string(),
                    format!(
                        "{v}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
                    ),
                )),
            }
        }
    }
    if let Some(annotations) = metadata_map(obj, "annotations", &mut errors) {
        let mut total = 0;
        for (k, v) in annotations {
            total += k.len() + v.as_str().map_or(0, str::len);
            if let Some(why) = qualified_name_error(&k.to_ascii_lowercase()) {
                errors.push(invalid(
                    "metadata.annotations".into(),
                    format!("{k:?}: {why}"),
                ));
            }
            if !v.is_string() {
                errors.push(invalid(
                    "metadata.annotations".to_string(),
                    format!("{v}: annotation values must be strings"),
                ));
            }
        }
        if total > ANNOTATIONS_MAX_BYTES {
            errors.push(FieldError::too_long(
                "metadata.annotations",
                ANNOTATIONS_MAX_BYTES as u64,
            ));
        }
    }
    match obj.pointer("/metadata/finalizers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, f) in items.iter().enumerate() {
                let why = match f.as_str() {
                    Some(name) => qualified_name_error(name),
                    None => Some("must be a string".into()),
                };
                if let Some(why) = why {
                    errors.push(invalid(
                        format!("metadata.finalizers[{i}]"),
                        format!("{f}: {why}"),
                    ));
                }
            }
        }
        Some(other) => errors.push(invalid(
            "metadata.finalizers".into(),
            format!("{other}: must be a list of strings"),
        )),
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names() {
        assert!(dns1123_subdomain_error("a.b-c.d1").is_none());
        for bad in ["", "A", "-a", "a-", "a..b", "a_b"] {
            assert!(dns1123_subdomain_error(bad).is_some(), "{bad}");
        }
        assert!(dns1123_label_error("a.b").is_some());
        let g = generate_name("web-");
        assert_eq!(g.len(), 9);
        assert!(dns1123_subdomain_error(&g).is_none());
    }

    #[test]
    fn labels() {
        let ok = json!({"metadata": {"labels": {"app.kubernetes.io/name": "x", "a": ""}}});
        assert!(validate_labels_and_annotations(&ok).is_empty());
        let bad = json!({"metadata": {"labels": {"-a": "x", "b": "-"}, "annotations": {"k": 1}, "finalizers": "x"}});
        assert_eq!(validate_labels_and_annotations(&bad).len(), 4);
        let fin = json!({"metadata": {"finalizers": ["example.com/ok", "Bad Name", 3]}});
        assert_eq!(validate_labels_and_annotations(&fin).len(), 2);
    }
}
