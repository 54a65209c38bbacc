//! The parts of a CRD version that name fields of its objects — `selectableFields` and the
//! `scale` subresource's paths — read and checked against the version's schema as Kubernetes
//! checks them.

use serde_json::Value;

use crate::schema::field_schema;
use crate::strategy::{FieldError, FieldErrorKind};

/// Kubernetes' bound on `selectableFields` per version.
const MAX_SELECTABLE_FIELDS: usize = 8;

/// The `scale` subresource of a version: where its replica counts and selector live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleSubresource {
    /// `specReplicasPath` without its leading dot (`spec.replicas`).
    pub spec_replicas: String,
    /// `statusReplicasPath` without its leading dot (`status.replicas`).
    pub status_replicas: String,
    /// `labelSelectorPath` without its leading dot, if any (`status.selector`).
    pub label_selector: Option<String>,
}

fn invalid(field: String, value: &str, detail: &str) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Invalid,
        field,
        detail: format!("{value:?}: {detail}"),
    }
}

/// The schema of the field at `path` (dotted, no leading dot).
fn schema_at<'a>(schema: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(schema, |s, part| field_schema(Some(s), part))
}

/// A simple JSON path (`.spec.color`): dotted names, no array notation. The path without its
/// leading dot, or why it is not one.
fn simple_path(path: &str) -> Result<&str, &'static str> {
    let Some(rest) = path.strip_prefix('.') else {
        return Err("must be a simple json path starting with .");
    };
    let plain = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '$'))
    };
    if rest.split('.').all(plain) {
        Ok(rest)
    } else {
        Err("is an invalid path: must be a simple json path without array notation")
    }
}

/// The version's `selectableFields` (paths without their leading dot), with the field errors
/// of those Kubernetes refuses: no path, not a simple path, a metadata field, a field the schema
/// lacks or that is not a string, integer or boolean, a duplicate, more than 8. `field` is the
/// version's path (`spec.versions[0]`).
pub(super) fn selectable_fields(
    version: &Value,
    schema: Option<&Value>,
    field: &str,
    errors: &mut Vec<FieldError>,
) -> Vec<String> {
    let declared = version
        .get("selectableFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let at = format!("{field}.selectableFields");
    if declared.len() > MAX_SELECTABLE_FIELDS {
        errors.push(FieldError::too_many(
            at.clone(),
            declared.len() as u64,
            MAX_SELECTABLE_FIELDS as u64,
        ));
    }
    let mut fields: Vec<String> = Vec::new();
    for (j, f) in declared.iter().enumerate() {
        let here = format!("{at}[{j}].jsonPath");
        let Some(path) = f
            .get("jsonPath")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        else {
            errors.push(FieldError {
                kind: FieldErrorKind::Required,
                field: here,
                detail: String::new(),
            });
            continue;
        };
        let plain = match simple_path(path) {
            Ok(plain) => plain,
            Err(why) => {
                errors.push(invalid(here, path, why));
                continue;
            }
        };
        if plain == "metadata" || plain.starts_with("metadata.") {
            errors.push(invalid(here, path, "must not point to metadata fields"));
            continue;
        }
        if let Some(schema) = schema {
            let kind = schema_at(schema, plain).and_then(|s| s.get("type"));
            match kind.and_then(Value::as_str) {
                Some("string" | "integer" | "boolean") => {}
                Some(_) => {
                    errors.push(invalid(
                        here,
                        path,
                        "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed",
                    ));
                    continue;
                }
                None => {
                    errors.push(invalid(
                        here,
                        path,
                        "is an invalid path: no such field in the schema",
                    ));
                    continue;
                }
            }
        }
        if fields.iter().any(|known| known == plain) {
            errors.push(FieldError {
                kind: FieldErrorKind::Duplicate,
                field: here,
                detail: format!("{path:?}"),
            });
            continue;
        }
        fields.push(plain.to_string());
    }
    fields
}

/// The version's `subresources.scale`, with the field errors of its paths: the replica paths
/// are required simple paths under `.spec` and `.status`, the selector path one under either.
pub(super) fn scale_subresource(
    version: &Value,
    field: &str,
    errors: &mut Vec<FieldError>,
) -> Option<ScaleSubresource> {
    let scale = version.pointer("/subresources/scale")?;
    let at = format!("{field}.subresources.scale");
    let mut path = |key: &str, roots: &[&str], required: bool| -> Option<String> {
        let here = format!("{at}.{key}");
        let Some(given) = scale
            .get(key)
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        else {
            if required {
                errors.push(FieldError {
                    kind: FieldErrorKind::Required,
                    field: here,
                    detail: String::new(),
                });
            }
            return None;
        };
        match simple_path(given) {
            Ok(plain) if roots.iter().any(|r| plain.starts_with(&format!("{r}."))) => {
                Some(plain.to_string())
            }
            Ok(_) => {
                let roots: Vec<String> = roots.iter().map(|r| format!(".{r}")).collect();
                let detail = format!("should be a json path under {}", roots.join(" or "));
                errors.push(invalid(here, given, &detail));
                None
            }
            Err(why) => {
                errors.push(invalid(here, given, why));
                None
            }
        }
    };
    let spec_replicas = path("specReplicasPath", &["spec"], true);
    let status_replicas = path("statusReplicasPath", &["status"], true);
    let label_selector = path("labelSelectorPath", &["spec", "status"], false);
    Some(ScaleSubresource {
        spec_replicas: spec_replicas?,
        status_replicas: status_replicas?,
        label_selector,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectable_fields_are_checked_against_the_schema() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "color": {"type": "string", "enum": ["red"]}, "size": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}}}}}});
        let version = json!({"selectableFields": [
            {"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.tags"},
            {"jsonPath": "spec.color"}, {"jsonPath": ".spec.tags[0]"}, {"jsonPath": ".metadata.name"},
            {"jsonPath": ".spec.nothing"}, {"jsonPath": ".spec.color"}, {}]});
        let mut errors = Vec::new();
        let fields = selectable_fields(&version, Some(&schema), "spec.versions[0]", &mut errors);
        assert_eq!(fields, vec!["spec.color", "spec.size"]);
        let got: Vec<(String, FieldErrorKind)> =
            errors.into_iter().map(|e| (e.field, e.kind)).collect();
        let at = |j: usize| format!("spec.versions[0].selectableFields[{j}].jsonPath");
        assert_eq!(
            got,
            vec![
                (
                    "spec.versions[0].selectableFields".into(),
                    FieldErrorKind::TooMany
                ),
                (at(2), FieldErrorKind::Invalid),
                (at(3), FieldErrorKind::Invalid),
                (at(4), FieldErrorKind::Invalid),
                (at(5), FieldErrorKind::Invalid),
                (at(6), FieldErrorKind::Invalid),
                (at(7), FieldErrorKind::Duplicate),
                (at(8), FieldErrorKind::Required),
            ]
        );
    }

    #[test]
    fn scale_paths_must_sit_under_spec_and_status() {
        let mut errors = Vec::new();
        let good = json!({"subresources": {"scale": {"specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}}});
        let scale = scale_subresource(&good, "spec.versions[0]", &mut errors).unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(scale.spec_replicas, "spec.replicas");
        assert_eq!(scale.label_selector.as_deref(), Some("status.selector"));
        let bad = json!({"subresources": {"scale": {"specReplicasPath": ".status.replicas"}}});
        assert!(scale_subresource(&bad, "spec.versions[0]", &mut errors).is_none());
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "spec.versions[0].subresources.scale.specReplicasPath",
                "spec.versions[0].subresources.scale.statusReplicasPath"
            ]
        );
    }
}
