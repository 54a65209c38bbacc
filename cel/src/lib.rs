//! Kubernetes' CEL for every layer of Strategy Host. Here the validation rules of CRD schemas
//! (`x-kubernetes-validations`), through the kube-rs organisation's `kube-cel` (Kubernetes' CEL
//! libraries over the `cel` crate): compiled once per
//! definition version when a definition is read (a rule that does not compile, or whose estimated
//! cost exceeds Kubernetes' per-rule budget, refuses the CRD write with 422), and evaluated on
//! create and update with `self`, `oldSelf` (transition rules, on update only unless
//! `optionalOldSelf`), `apiVersion`, `apiGroup` and `kind`.
//!
//! `kube-cel`'s base has no runtime cost accounting; the estimate at CRD write time (lists and
//! strings without `maxItems`/`maxLength` counted as Kubernetes' defaults) is what bounds a rule.
//! [`expression`] holds the expressions the layers above evaluate over their own variables
//! (admission policies, authentication and authorization configurations), and [`type_check`]
//! checks them against the kinds they will see.
//!
//! A crate below the registry: it knows the strategy contract's field errors and
//! apimachinery's object metadata, nothing of storage or the registry.

pub mod expression;
pub mod type_check;

use std::sync::Arc;

use kube_cel::cel::common::ast::{
    EntryExpr, Expr, IdedEntryExpr, LiteralValue, MapEntryExpr, MapExpr,
};
use kube_cel::cel::{IdedExpr, Program};
use kube_cel::{
    compile_schema, estimate_rule_cost, CompiledSchema, ErrorKind, RootContext, Validator,
    WarningKind,
};
use serde_json::Value;

use strategy_host_contract::strategy::{FieldError, FieldErrorKind};

/// The compiled rules of one schema.
#[derive(Clone)]
pub struct CelRules {
    compiled: Arc<CompiledSchema>,
    validator: Arc<Validator>,
}

impl std::fmt::Debug for CelRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelRules").finish_non_exhaustive()
    }
}

/// Rules compiled from the same schema are the same rules (the schema is compared beside them).
impl PartialEq for CelRules {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Whether `schema` has any rule at any level.
fn has_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            map.contains_key("x-kubernetes-validations") || map.values().any(has_rules)
        }
        Value::Array(items) => items.iter().any(has_rules),
        _ => false,
    }
}

/// The reasons a rule may give, as Kubernetes allows them.
const REASONS: &[&str] = &[
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
];

impl CelRules {
    /// Compiles the rules of `schema` (the `openAPIV3Schema` at `field`, e.g.
    /// `spec.versions[0].schema.openAPIV3Schema`); `None` when it has none.
    ///
    /// # Errors
    /// One field error per rule that does not compile, gives an unknown reason, or whose
    /// estimated cost exceeds the per-rule budget.
    pub fn compile(schema: &Value, field: &str) -> Result<Option<Self>, Vec<FieldError>> {
        if !has_rules(schema) {
            return Ok(None);
        }
        let compiled = compile_schema(schema);
        let mut errors = Vec::new();
        check(&compiled, schema, field, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Some(Self {
            compiled: Arc::new(compiled),
            validator: Arc::new(Validator::new()),
        }))
    }

    /// Evaluates the rules on `obj` (`old` on update), for a resource of `api_version`/`kind`.
    /// `status_only` evaluates only the rules of `.status` (the status subresource).
    pub fn validate(
        &self,
        obj: &Value,
        old: Option<&Value>,
        api_version: &str,
        kind: &str,
        status_only: bool,
    ) -> Vec<FieldError> {
        let root = RootContext {
            api_version: api_version.into(),
            api_group: strategy_host_apimachinery::group_version(api_version)
                .0
                .to_owned(),
            kind: kind.into(),
        };
        let (compiled, obj, old, prefix) = if status_only {
            let Some(status_rules) = self.compiled.properties.get("status") else {
                return Vec::new();
            };
            let Some(status) = obj.get("status") else {
                return Vec::new();
            };
            (
                status_rules,
                status,
                old.and_then(|o| o.get("status")),
                "status",
            )
        } else {
            (&*self.compiled, obj, old, "")
        };
        let Err(failures) =
            self.validator
                .validate_compiled_with_context(compiled, obj, old, Some(&root))
        else {
            return Vec::new();
        };
        failures
            .into_vec()
            .into_iter()
            // Ratcheting: a rule's failure on a value the update left unchanged stands as it
            // stood (Kubernetes' CRDValidationRatcheting).
            .filter(|f| {
                let unchanged = old.is_some_and(|old| {
                    value_at(obj, &f.field_path).is_some()
                        && value_at(obj, &f.field_path) == value_at(old, &f.field_path)
                });
                !unchanged
            })
            .map(|f| {
                let field = match (prefix, f.field_path.as_str()) {
                    ("", path) => path.to_string(),
                    (p, "") => p.to_string(),
                    (p, path) => format!("{p}.{path}"),
                };
                let value_type = type_at(obj, &f.field_path);
                let kind = match (f.kind, f.reason.as_deref()) {
                    (ErrorKind::ValidationFailure, Some("FieldValueForbidden")) => {
                        FieldErrorKind::Forbidden
                    }
                    (ErrorKind::ValidationFailure, Some("FieldValueRequired")) => {
                        FieldErrorKind::Required
                    }
                    (ErrorKind::ValidationFailure, Some("FieldValueDuplicate")) => {
                        FieldErrorKind::Duplicate
                    }
                    _ => FieldErrorKind::Invalid,
                };
                let detail = match kind {
                    // Kubernetes words a failed rule as an invalid value of the field's type.
                    FieldErrorKind::Invalid => format!("{value_type:?}: {}", f.message),
                    _ => f.message,
                };
                FieldError {
                    kind,
                    field,
                    detail,
                }
            })
            .collect()
    }
}

/// The value at a dotted path as kube-cel reports it (`spec.items[2].name`; map keys as fields).
fn value_at<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, index) = match part.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        if !name.is_empty() {
            cur = cur.get(name)?;
        }
        if let Some(i) = index {
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

/// The JSON type name of the value at a dotted path (`object`, `array`, `string`, ...).
fn type_at(obj: &Value, path: &str) -> &'static str {
    match value_at(obj, path) {
        None | Some(Value::Object(_) | Value::Null) => "object",
        Some(Value::Array(_)) => "array",
        Some(Value::String(_)) => "string",
        Some(Value::Number(n)) if n.is_f64() => "number",
        Some(Value::Number(_)) => "integer",
        Some(Value::Bool(_)) => "boolean",
    }
}

/// Rewrites every typed object literal (struct literal, e.g. `Object{spec: ...}`) in `e` into a
/// map literal keyed by its field names, adding each one's type name to `found`: the `cel`
/// interpreter cannot evaluate struct literals (it panics), and as JSON they are maps.
pub fn typed_literals_as_maps(e: &mut IdedExpr, found: &mut Vec<String>) {
    let each = |children: &mut [&mut IdedExpr], found: &mut Vec<String>| {
        for child in children.iter_mut() {
            typed_literals_as_maps(child, found);
        }
    };
    match &mut e.expr {
        Expr::Struct(s) => {
            found.push(s.type_name.clone());
            let entries = std::mem::take(&mut s.entries)
                .into_iter()
                .map(|entry| match entry.expr {
                    EntryExpr::StructField(field) => {
                        let key = IdedExpr {
                            id: entry.id,
                            expr: Expr::Literal(LiteralValue::String(field.field.as_str().into())),
                        };
                        let mut value = field.value;
                        typed_literals_as_maps(&mut value, found);
                        let expr = EntryExpr::MapEntry(MapEntryExpr {
                            key,
                            value,
                            optional: field.optional,
                        });
                        IdedEntryExpr { id: entry.id, expr }
                    }
                    other => IdedEntryExpr {
                        id: entry.id,
                        expr: other,
                    },
                })
                .collect();
            e.expr = Expr::Map(MapExpr { entries });
            typed_literals_as_maps(e, found);
        }
        Expr::Map(m) => {
            for entry in &mut m.entries {
                if let EntryExpr::MapEntry(me) = &mut entry.expr {
                    each(&mut [&mut me.key, &mut me.value], found);
                }
            }
        }
        Expr::Call(c) => {
            if let Some(target) = &mut c.target {
                typed_literals_as_maps(target, found);
            }
            for arg in &mut c.args {
                typed_literals_as_maps(arg, found);
            }
        }
        Expr::List(l) => {
            for element in &mut l.elements {
                typed_literals_as_maps(element, found);
            }
        }
        Expr::Select(s) => typed_literals_as_maps(&mut s.operand, found),
        Expr::Comprehension(c) => each(
            &mut [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ],
            found,
        ),
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => {}
    }
}

/// The type names of the typed object literals in `source` (none when it does not parse).
fn typed_literals_in(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(program) = Program::compile(source) {
        typed_literals_as_maps(&mut program.expression().clone(), &mut found);
    }
    found
}

/// Walks the compiled tree beside its schema, collecting what Kubernetes refuses at CRD write.
fn check(compiled: &CompiledSchema, schema: &Value, field: &str, errors: &mut Vec<FieldError>) {
    for (i, result) in compiled.validations.iter().enumerate() {
        let at = format!("{field}.x-kubernetes-validations[{i}]");
        match result {
            Err(e) => errors.push(FieldError {
                kind: FieldErrorKind::Invalid,
                field: format!("{at}.rule"),
                detail: format!("compilation failed: {e}"),
            }),
            Ok(rule) => {
                // CRD rules have no object types, so Kubernetes' type check refuses these.
                if let Some(name) = typed_literals_in(&rule.rule.rule).first() {
                    errors.push(FieldError {
                        kind: FieldErrorKind::Invalid,
                        field: format!("{at}.rule"),
                        detail: format!("compilation failed: undeclared reference to '{name}'"),
                    });
                    continue;
                }
                if let Some(reason) = rule.rule.reason.as_deref() {
                    if !REASONS.contains(&reason) {
                        errors.push(FieldError {
                            kind: FieldErrorKind::NotSupported,
                            field: format!("{at}.reason"),
                            detail: format!(
                                "{reason:?}: supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                            ),
                        });
                    }
                }
                for w in estimate_rule_cost(&rule.rule.rule, compiled) {
                    if w.kind == WarningKind::CostExceeded {
                        errors.push(FieldError {
                            kind: FieldErrorKind::Forbidden,
                            field: format!("{at}.rule"),
                            detail: format!("estimated rule cost exceeds budget: {} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)", w.message),
                        });
                    }
                }
            }
        }
    }
    for (name, child) in &compiled.properties {
        if let Some(child_schema) = schema.pointer(&format!(
            "/properties/{}",
            name.replace('~', "~0").replace('/', "~1")
        )) {
            check(
                child,
                child_schema,
                &format!("{field}.properties[{name}]"),
                errors,
            );
        }
    }
    if let (Some(items), Some(items_schema)) = (&compiled.items, schema.get("items")) {
        check(items, items_schema, &format!("{field}.items"), errors);
    }
    if let (Some(additional), Some(additional_schema)) = (
        &compiled.additional_properties,
        schema.get("additionalProperties"),
    ) {
        check(
            additional,
            additional_schema,
            &format!("{field}.additionalProperties"),
            errors,
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "self.name == oldSelf.name", "message": "name is immutable", "reason": "FieldValueForbidden"}
        ],
        "properties": {
            "min": {"type": "integer"}, "max": {"type": "integer"},
            "name": {"type": "string", "maxLength": 63,
                     "x-kubernetes-validations": [{"rule": "self.startsWith('x')", "messageExpression": "'name ' + self + ' must start with x'"}]}
        }}}})
    }

    #[test]
    fn rules_compile_and_fail_as_kubernetes_words_them() {
        let rules = CelRules::compile(&schema(), "spec.versions[0].schema.openAPIV3Schema")
            .unwrap()
            .unwrap();
        let ok = json!({"spec": {"min": 1, "max": 2, "name": "xa"}});
        assert!(rules
            .validate(&ok, None, "example.com/v1", "W", false)
            .is_empty());
        let bad = json!({"spec": {"min": 3, "max": 2, "name": "ya"}});
        let errs = rules.validate(&bad, None, "example.com/v1", "W", false);
        let shown: Vec<(String, String)> = errs
            .iter()
            .map(|e| (e.field.clone(), e.detail.clone()))
            .collect();
        assert!(
            shown.contains(&("spec".into(), "\"object\": min must not exceed max".into())),
            "{shown:?}"
        );
        assert!(
            shown.contains(&(
                "spec.name".into(),
                "\"string\": name ya must start with x".into()
            )),
            "{shown:?}"
        );
        // The transition rule runs only on update.
        let renamed = json!({"spec": {"min": 1, "max": 2, "name": "xb"}});
        let errs = rules.validate(&renamed, Some(&ok), "example.com/v1", "W", false);
        assert_eq!(errs.len(), 1);
        assert_eq!(
            (errs[0].kind, errs[0].detail.as_str()),
            (FieldErrorKind::Forbidden, "name is immutable")
        );
    }

    #[test]
    fn bad_and_expensive_rules_refuse_the_definition() {
        let bad = json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.a ==", "reason": "Nope"}]});
        let errs = CelRules::compile(&bad, "s").unwrap_err();
        assert!(
            errs[0].field == "s.x-kubernetes-validations[0].rule"
                && errs[0].detail.starts_with("compilation failed")
        );
        let costly = json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(a, self.all(b, self.all(c, a + b + c != '')))"}]}}});
        let errs = CelRules::compile(&costly, "s").unwrap_err();
        assert_eq!(
            errs[0].field,
            "s.properties[items].x-kubernetes-validations[0].rule"
        );
        assert_eq!(errs[0].kind, FieldErrorKind::Forbidden);
        assert!(CelRules::compile(&json!({"type": "object"}), "s")
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_rule_with_a_typed_object_literal_refuses_the_definition() {
        // The interpreter cannot evaluate struct literals (it panics); Kubernetes' type check
        // refuses them in CRD rules, which have no object types.
        let rule = json!({"type": "object", "properties": {"a": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self == Object{a: 1}"}]});
        let errs = CelRules::compile(&rule, "s").unwrap_err();
        assert_eq!(errs[0].field, "s.x-kubernetes-validations[0].rule");
        assert!(
            errs[0].detail.contains("undeclared reference to 'Object'"),
            "{}",
            errs[0].detail
        );
    }
}
