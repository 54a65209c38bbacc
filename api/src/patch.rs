//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902, the `json-patch` crate),
//! for built-in kinds strategic merge patch (on custom resources refused with 415, as
//! Kubernetes does), and server-side apply configurations (YAML or JSON), which the registry
//! applies.

use serde_json::Value;

use super::json_tree::{duplicate_field, parse_with_duplicates};
use super::status::Status;

/// A supported patch type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/strategic-merge-patch+json` (built-in kinds only).
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply; YAML or JSON).
    Apply,
}

/// The patch type of a `Content-Type` for a built-in kind or (`builtin` false) a custom resource.
///
/// # Errors
/// 415 for strategic merge on a custom resource, apply and anything else.
pub(crate) fn patch_kind(content_type: Option<&str>, builtin: bool) -> Result<PatchKind, Status> {
    match super::media::media_type(content_type).as_str() {
        "application/merge-patch+json" => Ok(PatchKind::Merge),
        "application/json-patch+json" => Ok(PatchKind::Json),
        "application/strategic-merge-patch+json" if builtin => Ok(PatchKind::Strategic),
        "application/strategic-merge-patch+json" => Err(Status::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json (strategic merge patch is not supported for custom resources)",
        )),
        "application/apply-patch+yaml" => Ok(PatchKind::Apply),
        _ => Err(Status::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json",
        )),
    }
}

/// A decoded patch, ready to apply to any current object.
#[derive(Debug, Clone)]
pub enum Patch {
    /// A merge patch document.
    Merge(Value),
    /// A JSON patch.
    Json(json_patch::Patch),
    /// A strategic merge patch document.
    Strategic(Value),
    /// A server-side apply configuration.
    Apply(Value),
}

impl Patch {
    /// Decodes a patch body, with the problems of the fields it repeats, worded as Kubernetes
    /// words them: `duplicate field "spec.a"` in JSON, `line 9: key "a" already set in map` in
    /// an apply configuration's YAML.
    ///
    /// # Errors
    /// 400 for malformed JSON or YAML, or a patch of the wrong shape.
    pub fn decode(kind: PatchKind, bytes: &[u8]) -> Result<(Self, Vec<String>), Status> {
        match parse_with_duplicates(bytes) {
            Ok((value, repeated)) => {
                let problems = repeated.iter().map(|d| duplicate_field(d)).collect();
                Ok((Self::from_json(kind, value)?, problems))
            }
            // JSON is YAML too; serde_yaml reads either (kubectl and client-go send JSON).
            Err(_) if kind == PatchKind::Apply => {
                let value: Value = serde_yaml::from_slice(bytes)
                    .map_err(|e| Status::bad_request(format!("error decoding YAML: {e}")))?;
                let problems = yaml_duplicate(bytes).into_iter().collect();
                Ok((Self::from_json(kind, value)?, problems))
            }
            Err(e) => Err(Status::bad_request(format!("error decoding patch: {e}"))),
        }
    }

    /// A patch of `kind` from its parsed document.
    ///
    /// # Errors
    /// 400 for a document of the wrong shape (a merge patch or apply configuration that is not
    /// an object, a malformed JSON patch).
    fn from_json(kind: PatchKind, value: Value) -> Result<Self, Status> {
        match kind {
            PatchKind::Apply if !value.is_object() => Err(Status::bad_request(
                "an apply configuration must be an object",
            )),
            PatchKind::Apply => Ok(Self::Apply(value)),
            PatchKind::Merge | PatchKind::Strategic if !value.is_object() => {
                Err(Status::bad_request("a merge patch must be a JSON object"))
            }
            PatchKind::Merge => Ok(Self::Merge(value)),
            PatchKind::Strategic => Ok(Self::Strategic(value)),
            PatchKind::Json => serde_json::from_value(value)
                .map(Self::Json)
                .map_err(|e| Status::bad_request(format!("error decoding JSON patch: {e}"))),
        }
    }

    /// Applies the patch to `current`; a strategic merge patch follows `schema`'s list types.
    ///
    /// # Errors
    /// The reason a JSON patch operation failed (a failed test, a missing path), or an
    /// unknown strategic merge directive.
    pub fn apply(&self, current: &Value, schema: Option<&Value>) -> Result<Value, PatchError> {
        let mut doc = current.clone();
        match self {
            Self::Merge(p) => json_patch::merge(&mut doc, p),
            Self::Json(p) => json_patch::patch(&mut doc, p)?,
            Self::Strategic(p) => super::strategic_merge::apply(&mut doc, p, schema)?,
            // The registry applies configurations (by field ownership), not this.
            Self::Apply(_) => return Err(PatchError::NotAPatch),
        }
        Ok(doc)
    }
}

/// Why a patch cannot be applied to an object.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// A JSON patch operation failed (a failed `test`, a missing path).
    #[error(transparent)]
    Json(#[from] json_patch::PatchError),
    /// A strategic merge patch has an unknown `$patch` directive.
    #[error(transparent)]
    Strategic(#[from] super::strategic_merge::UnknownDirective),
    /// An apply configuration, which the registry merges by field ownership instead.
    #[error("an apply configuration is not a patch")]
    NotAPatch,
}

/// The first key a YAML document repeats in one mapping, as Kubernetes' YAML decoder reports
/// it: `line 9: key "foo" already set in map` (the line of the repeat). serde_yaml finds the
/// repeat but reports where its mapping starts; the repeat's own line is the second key of that
/// name at the mapping's indentation below it.
fn yaml_duplicate(bytes: &[u8]) -> Option<String> {
    let error = serde_yaml::from_slice::<serde_yaml::Value>(bytes).err()?;
    let message = error.to_string();
    let key = message
        .split_once("duplicate entry with key \"")?
        .1
        .split_once('"')?
        .0
        .to_string();
    let location = error.location()?;
    let text = std::str::from_utf8(bytes).ok()?;
    let indent = location.column().saturating_sub(1);
    let entry = format!("{key}:");
    let mut seen = false;
    for (index, line) in text
        .lines()
        .enumerate()
        .skip(location.line().saturating_sub(1))
    {
        let content = line.trim_start();
        let depth = line.len() - content.len();
        if content.is_empty() || content.starts_with('#') || depth > indent {
            continue;
        }
        if depth < indent {
            break;
        }
        if content.starts_with(&entry) || content.starts_with(&format!("\"{key}\":")) {
            if seen {
                return Some(format!(
                    "line {}: key {key:?} already set in map",
                    index + 1
                ));
            }
            seen = true;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patches() {
        let cur = json!({"spec": {"a": 1, "b": 2}});
        let (m, _) = Patch::decode(PatchKind::Merge, br#"{"spec":{"a":null,"c":3}}"#).unwrap();
        assert_eq!(
            m.apply(&cur, None).unwrap(),
            json!({"spec": {"b": 2, "c": 3}})
        );
        let (j, _) = Patch::decode(
            PatchKind::Json,
            br#"[{"op":"replace","path":"/spec/a","value":5}]"#,
        )
        .unwrap();
        assert_eq!(j.apply(&cur, None).unwrap()["spec"]["a"], 5);
        let (t, _) = Patch::decode(
            PatchKind::Json,
            br#"[{"op":"test","path":"/spec/a","value":9}]"#,
        )
        .unwrap();
        assert!(t.apply(&cur, None).is_err());
        assert_eq!(
            patch_kind(Some("application/strategic-merge-patch+json"), true).unwrap(),
            PatchKind::Strategic
        );
        assert_eq!(
            patch_kind(Some("application/strategic-merge-patch+json"), false)
                .unwrap_err()
                .code,
            415
        );
        assert!(Patch::decode(PatchKind::Json, b"{}").is_err());
        let yaml = b"apiVersion: a/v1\nkind: K\nspec:\n  unknown: 1\n  foo: a\n  # c\n  foo: b\n";
        let (_, problems) = Patch::decode(PatchKind::Apply, yaml).unwrap();
        assert_eq!(problems, [r#"line 7: key "foo" already set in map"#]);
        let (_, problems) = Patch::decode(PatchKind::Apply, br#"{"a":1,"a":2}"#).unwrap();
        assert_eq!(problems, [r#"duplicate field "a""#]);
    }
}
