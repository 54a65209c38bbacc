//! The native strategy of CustomResourceDefinitions: validated as definitions, status reporting
//! NamesAccepted and Established (and Terminating while one is deleted: `crd_lifecycle.rs`).
//! (Namespaces' is in `namespace_lifecycle.rs`.)

use async_trait::async_trait;
use serde_json::{json, Value};

use super::definition::ResourceDefinition;
use super::system_fields::now_rfc3339;
use crate::strategy::{Admission, Answer, FieldError, FieldErrorKind, Strategy, StrategyContext};

/// The strategy of `customresourcedefinitions`.
pub struct CrdStrategy;

/// A definition's `status.storedVersions` after a write: the versions objects may be stored at
/// — those recorded before (`kept`: an update's, which a status write may shorten) and the
/// storage version now — and the field errors of a recorded version `spec.versions` dropped.
fn stored_versions(obj: &Value, kept: Vec<String>) -> (Vec<String>, Vec<FieldError>) {
    let versions: Vec<&Value> = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().collect())
        .unwrap_or_default();
    let mut stored = kept;
    for v in versions.iter().filter(|v| v["storage"] == true) {
        if let Some(name) = v["name"].as_str() {
            if !stored.iter().any(|s| s == name) {
                stored.push(name.to_string());
            }
        }
    }
    let errors = stored
        .iter()
        .enumerate()
        .filter(|(_, s)| !versions.iter().any(|v| v["name"].as_str() == Some(s.as_str())))
        .map(|(i, s)| FieldError {
            kind: FieldErrorKind::Invalid,
            field: format!("status.storedVersions[{i}]"),
            detail: format!("{s:?}: missing from spec.versions; {s} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {s} and it is removed from status.storedVersions"),
        })
        .collect();
    (stored, errors)
}

/// The conditions the server decides on a definition; any other a client writes through the
/// status subresource is the client's, and stays.
const SERVER_CONDITIONS: [&str; 3] = ["NamesAccepted", "Established", "Terminating"];

/// Checks a definition and sets its status; `kept` are the stored versions recorded before,
/// `theirs` the conditions of others' to keep beside the server's.
fn crd_admission(obj: &mut Value, kept: Vec<String>, theirs: Vec<Value>) -> Admission {
    match ResourceDefinition::from_crd(obj) {
        Err(field_errors) => Admission {
            field_errors,
            refusal: None,
            warnings: vec![],
        },
        Ok(_) => {
            let now = now_rfc3339();
            let condition = |type_: &str, reason: &str, message: &str| json!({"type": type_, "status": "True", "lastTransitionTime": now, "reason": reason, "message": message});
            let (stored, field_errors) = stored_versions(obj, kept);
            let mut conditions = vec![
                condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                condition(
                    "Established",
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                ),
            ];
            // A definition being deleted keeps reporting how far its cleanup is.
            conditions.extend(super::crd_lifecycle::terminating_condition(obj));
            conditions.extend(theirs);
            obj["status"] = json!({
                "conditions": conditions,
                "acceptedNames": obj["spec"]["names"].clone(),
                "storedVersions": stored,
            });
            Admission {
                field_errors,
                ..Admission::default()
            }
        }
    }
}

#[async_trait]
impl Strategy for CrdStrategy {
    fn name(&self) -> &str {
        "builtin-customresourcedefinitions"
    }

    async fn before_create(&self, _ctx: &StrategyContext, obj: &mut Value) -> Answer {
        Ok(crd_admission(obj, Vec::new(), Vec::new()))
    }

    async fn before_update(&self, _ctx: &StrategyContext, new: &mut Value, old: &Value) -> Answer {
        // The status as this write leaves it: the old one on a main write, the client's on a
        // status write (which is how a version is dropped from storedVersions).
        let kept = crate::system_fields::strings(new.pointer("/status/storedVersions"));
        let theirs = new
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .map(|conditions| {
                conditions
                    .iter()
                    .filter(|c| {
                        !SERVER_CONDITIONS.contains(&c["type"].as_str().unwrap_or_default())
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let mut admission = crd_admission(new, kept, theirs);
        if admission.field_errors.is_empty() {
            for (field, pointer) in [
                ("spec.group", "/spec/group"),
                ("spec.names.plural", "/spec/names/plural"),
            ] {
                if new.pointer(pointer) != old.pointer(pointer) {
                    admission.field_errors.push(crate::strategy::FieldError {
                        kind: crate::strategy::FieldErrorKind::Invalid,
                        field: field.into(),
                        detail: format!(
                            "{}: field is immutable",
                            new.pointer(pointer).unwrap_or(&Value::Null)
                        ),
                    });
                }
            }
        }
        Ok(admission)
    }
}
