//! Reading a CustomResourceDefinition (or a built-in kind's CRD-shaped document) into a
//! [`ResourceDefinition`], with the field errors a CRD write answers 422 with.

use serde_json::Value;

use super::*;
use crate::names::{dns1123_label_error, dns1123_subdomain_error};
use crate::strategy::FieldErrorKind;
use crate::system_fields::strings;

impl ResourceDefinition {
    /// Reads a CRD-shaped document; `builtin` lifts the rules on a CRD's group and name (and
    /// reads the built-in column extensions `x-count` and `x-template`). The result is not
    /// marked built in: a caller serving it as such sets `builtin`.
    ///
    /// # Errors
    /// The field errors a CRD create or update would answer 422 with.
    pub fn parse(crd: &Value, builtin: bool) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let s = |v: &Value, p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let err = |kind, field: &str, detail: String| FieldError {
            kind,
            field: field.into(),
            detail,
        };
        let group = s(crd, "/spec/group");
        let plural = s(crd, "/spec/names/plural");
        let kind = s(crd, "/spec/names/kind");
        let name = s(crd, "/metadata/name");
        if builtin {
            // Built-in kinds may have the core group "" and any metadata name.
        } else if group.is_empty() {
            errors.push(err(FieldErrorKind::Required, "spec.group", String::new()));
        } else if let Some(why) = dns1123_subdomain_error(&group) {
            errors.push(err(
                FieldErrorKind::Invalid,
                "spec.group",
                format!("{group:?}: {why}"),
            ));
        } else if !group.contains('.') {
            errors.push(err(
                FieldErrorKind::Invalid,
                "spec.group",
                format!("{group:?}: should be a domain with at least one dot"),
            ));
        }
        if plural.is_empty() {
            errors.push(err(
                FieldErrorKind::Required,
                "spec.names.plural",
                String::new(),
            ));
        } else if let Some(why) = dns1123_label_error(&plural) {
            errors.push(err(
                FieldErrorKind::Invalid,
                "spec.names.plural",
                format!("{plural:?}: {why}"),
            ));
        }
        if kind.is_empty() {
            errors.push(err(
                FieldErrorKind::Required,
                "spec.names.kind",
                String::new(),
            ));
        }
        if !builtin
            && !plural.is_empty()
            && !group.is_empty()
            && name != format!("{plural}.{group}")
        {
            errors.push(err(
                FieldErrorKind::Invalid,
                "metadata.name",
                format!("{name:?}: must be spec.names.plural+\".\"+spec.group"),
            ));
        }
        let scope = s(crd, "/spec/scope");
        let namespaced = match scope.as_str() {
            "Namespaced" => true,
            "Cluster" => false,
            "" => {
                errors.push(err(FieldErrorKind::Required, "spec.scope", String::new()));
                true
            }
            other => {
                errors.push(err(
                    FieldErrorKind::NotSupported,
                    "spec.scope",
                    format!("{other:?}: supported values: \"Cluster\", \"Namespaced\""),
                ));
                true
            }
        };
        let conversion = Conversion::parse(crd, &mut errors);
        let all_versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if all_versions.is_empty() {
            errors.push(err(
                FieldErrorKind::Required,
                "spec.versions",
                "must have exactly one version marked as storage version".into(),
            ));
        }
        let storage_count = all_versions.iter().filter(|v| v["storage"] == true).count();
        if !all_versions.is_empty() && storage_count != 1 {
            errors.push(err(
                FieldErrorKind::Invalid,
                "spec.versions",
                format!("{storage_count}: must have exactly one version marked as storage version"),
            ));
        }
        let mut versions = Vec::new();
        for (i, v) in all_versions.iter().enumerate() {
            let vname = s(v, "/name");
            if let Some(why) = dns1123_label_error(&vname) {
                errors.push(err(
                    FieldErrorKind::Invalid,
                    &format!("spec.versions[{i}].name"),
                    format!("{vname:?}: {why}"),
                ));
            }
            let schema = v.pointer("/schema/openAPIV3Schema").cloned();
            if let Some(schema) = &schema {
                if !schema.is_object() {
                    errors.push(err(
                        FieldErrorKind::Invalid,
                        &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                        "must be an object".into(),
                    ));
                } else if let Some(bad) = crate::schema::check_schema(schema) {
                    errors.push(err(
                        FieldErrorKind::Invalid,
                        &format!("spec.versions[{i}].schema.openAPIV3Schema{bad}"),
                        "not a valid schema".into(),
                    ));
                }
            }
            let cel = match &schema {
                Some(schema) if schema.is_object() => strategy_host_cel::CelRules::compile(
                    schema,
                    &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                )
                .unwrap_or_else(|rule_errors| {
                    errors.extend(rule_errors);
                    None
                }),
                _ => None,
            };
            let at = format!("spec.versions[{i}]");
            let mut field_errors = Vec::new();
            let selectable_fields = version_fields::selectable_fields(
                v,
                schema.as_ref().filter(|s| s.is_object()),
                &at,
                &mut field_errors,
            );
            let scale = version_fields::scale_subresource(v, &at, &mut field_errors);
            // Built-in kinds select fields a CRD may not (an Event's `source`, eleven of them).
            if !builtin {
                errors.extend(field_errors);
            }
            if v["served"] != true && v["storage"] != true {
                continue;
            }
            let printer_columns = v
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .map(|cols| {
                    cols.iter()
                        .map(|c| PrinterColumn {
                            name: s(c, "/name"),
                            type_: s(c, "/type"),
                            format: s(c, "/format"),
                            description: s(c, "/description"),
                            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                            json_path: s(c, "/jsonPath"),
                            count_paths: if builtin {
                                strings(c.pointer("/x-count"))
                            } else {
                                Vec::new()
                            },
                            template: if builtin {
                                s(c, "/x-template")
                            } else {
                                String::new()
                            },
                            absent: if builtin {
                                s(c, "/x-absent")
                            } else {
                                String::new()
                            },
                        })
                        .collect()
                })
                .unwrap_or_default();
            if v["served"] == true {
                versions.push(VersionDefinition {
                    name: vname,
                    storage: v["storage"] == true,
                    status_subresource: v
                        .pointer("/subresources/status")
                        .is_some_and(Value::is_object),
                    schema,
                    printer_columns,
                    cel,
                    selectable_fields,
                    scale,
                    deprecated: (v["deprecated"] == true).then(|| {
                        v.get("deprecationWarning")
                            .and_then(Value::as_str)
                            .map(String::from)
                    }),
                });
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let singular = Some(s(crd, "/spec/names/singular"))
            .filter(|x| !x.is_empty())
            .unwrap_or_else(|| kind.to_ascii_lowercase());
        let list_kind = Some(s(crd, "/spec/names/listKind"))
            .filter(|x| !x.is_empty())
            .unwrap_or_else(|| format!("{kind}List"));
        Ok(Self {
            group,
            plural,
            singular,
            kind,
            list_kind,
            short_names: strings(crd.pointer("/spec/names/shortNames")),
            categories: strings(crd.pointer("/spec/names/categories")),
            namespaced,
            versions,
            builtin: false,
            module_strategy: false,
            stored_as: None,
            create_only: false,
            conversion,
            terminating: crate::system_fields::is_being_deleted(crd),
            defaults_revision: 0,
        })
    }
}
