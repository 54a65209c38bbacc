//! Type checking of admission policies' CEL expressions (`status.typeChecking`): each field an
//! expression selects on `object` or `oldObject` is looked up in the schema of every kind the
//! policy matches (and on `params` in its paramKind's), and one the schema does not define is a
//! warning worded as Kubernetes' checker words it. That is the part of CEL's type checker users
//! meet — a misspelt field that would otherwise fail every request as "no such key" — written
//! here because no CEL crate in the tree checks types; overloads and value types are not
//! checked.

use std::collections::HashMap;

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use kube_cel::cel::parser::Parser;
use serde_json::Value;

use strategy_host_apimachinery::meta::OBJECT_META_FIELDS;

/// A kind an expression is checked against.
#[derive(Debug, Clone)]
pub struct CheckedKind {
    /// `apps/v1, Kind=Deployment` (`/v1, Kind=ConfigMap` for the core group), as Kubernetes
    /// names a group-version-kind.
    pub label: String,
    /// Its `openAPIV3Schema`.
    pub schema: Value,
}

impl CheckedKind {
    /// The kind `group/version` `kind` with `schema`.
    pub fn new(group: &str, version: &str, kind: &str, schema: Value) -> Self {
        Self {
            label: format!("{group}/{version}, Kind={kind}"),
            schema,
        }
    }
}

/// Where a selection leads.
#[derive(Clone, Copy)]
enum Node<'a> {
    /// The top of an object: `metadata`, `apiVersion` and `kind` besides its schema's fields.
    Root(&'a Value),
    /// A schema node.
    Schema(&'a Value),
    /// An object's `metadata`.
    ObjectMeta,
    /// Nothing known below (a map's values, a preserved-unknown object, a variable).
    Unknown,
}

impl<'a> Node<'a> {
    /// The node `field` selects, or `None` when the schema does not define it.
    fn field(self, field: &str) -> Option<Node<'a>> {
        match self {
            Node::Root(_) if field == "metadata" => Some(Node::ObjectMeta),
            Node::Root(_) if field == "apiVersion" || field == "kind" => Some(Node::Unknown),
            Node::Root(schema) | Node::Schema(schema) => {
                if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                    if let Some(property) = properties.get(field) {
                        return Some(Node::Schema(property));
                    }
                    let open = schema.get("x-kubernetes-preserve-unknown-fields")
                        == Some(&Value::Bool(true))
                        || schema.get("additionalProperties").is_some();
                    return open.then_some(Node::Unknown);
                }
                match schema.get("additionalProperties") {
                    Some(values @ Value::Object(_)) => Some(Node::Schema(values)),
                    _ => Some(Node::Unknown),
                }
            }
            Node::ObjectMeta => OBJECT_META_FIELDS.contains(&field).then_some(Node::Unknown),
            Node::Unknown => Some(Node::Unknown),
        }
    }

    /// The node of a list's items or a map's values.
    fn element(self) -> Node<'a> {
        match self {
            Node::Root(schema) | Node::Schema(schema) => {
                match (schema.get("items"), schema.get("additionalProperties")) {
                    (Some(items @ Value::Object(_)), _) => Node::Schema(items),
                    (_, Some(values @ Value::Object(_))) => Node::Schema(values),
                    _ => Node::Unknown,
                }
            }
            _ => Node::Unknown,
        }
    }

    /// What a comprehension over this node binds its variable to: a list's items; a map's keys
    /// (strings, nothing to select).
    fn iterated(self) -> Node<'a> {
        match self {
            Node::Root(schema) | Node::Schema(schema) if schema.get("items").is_some() => {
                self.element()
            }
            _ => Node::Unknown,
        }
    }
}

/// The undefined fields one expression selects, for one kind.
struct Walk<'a> {
    variables: HashMap<String, Node<'a>>,
    undefined: Vec<String>,
}

impl<'a> Walk<'a> {
    /// Visits `expr` and everything in it; answers where it leads.
    fn visit(&mut self, expr: &IdedExpr) -> Node<'a> {
        match &expr.expr {
            Expr::Ident(name) => self.variables.get(name).copied().unwrap_or(Node::Unknown),
            Expr::Select(select) => {
                let parent = self.visit(&select.operand);
                self.select(parent, &select.field)
            }
            Expr::Call(call) => {
                if let Some(target) = call.target.as_deref() {
                    self.visit(target);
                }
                let args: Vec<Node<'a>> = call.args.iter().map(|a| self.visit(a)).collect();
                let literal = |i: usize| match call.args.get(i).map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::String(s))) => Some(s.inner().to_owned()),
                    _ => None,
                };
                match call.func_name.as_str() {
                    // `a.?b`: an optional selection.
                    "_?._" => match (args.first().copied(), literal(1)) {
                        (Some(parent), Some(field)) => self.select(parent, &field),
                        _ => Node::Unknown,
                    },
                    "_[_]" | "_[?_]" => match (args.first().copied(), literal(1)) {
                        (Some(parent), Some(field)) if parent_has_properties(parent) => {
                            self.select(parent, &field)
                        }
                        (Some(parent), _) => parent.element(),
                        _ => Node::Unknown,
                    },
                    _ => Node::Unknown,
                }
            }
            Expr::Comprehension(c) => {
                let range = self.visit(&c.iter_range);
                self.visit(&c.accu_init);
                let mut bound = vec![(c.iter_var.clone(), range.iterated())];
                if let Some(second) = &c.iter_var2 {
                    bound.push((second.clone(), range.element()));
                }
                bound.push((c.accu_var.clone(), Node::Unknown));
                let saved: Vec<_> = bound
                    .into_iter()
                    .map(|(name, node)| {
                        let before = self.variables.insert(name.clone(), node);
                        (name, before)
                    })
                    .collect();
                self.visit(&c.loop_cond);
                self.visit(&c.loop_step);
                self.visit(&c.result);
                for (name, before) in saved.into_iter().rev() {
                    match before {
                        Some(node) => self.variables.insert(name, node),
                        None => self.variables.remove(&name),
                    };
                }
                Node::Unknown
            }
            Expr::List(list) => {
                for element in &list.elements {
                    self.visit(element);
                }
                Node::Unknown
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    self.visit_entry(&entry.expr);
                }
                Node::Unknown
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    self.visit_entry(&entry.expr);
                }
                Node::Unknown
            }
            Expr::Literal(_) | Expr::Unspecified => Node::Unknown,
        }
    }

    fn visit_entry(&mut self, entry: &EntryExpr) {
        match entry {
            EntryExpr::StructField(f) => {
                self.visit(&f.value);
            }
            EntryExpr::MapEntry(e) => {
                self.visit(&e.key);
                self.visit(&e.value);
            }
        }
    }

    fn select(&mut self, parent: Node<'a>, field: &str) -> Node<'a> {
        parent.field(field).unwrap_or_else(|| {
            self.undefined.push(field.to_owned());
            Node::Unknown
        })
    }
}

/// Whether a schema node names its fields (so an index by a string literal selects one).
fn parent_has_properties(node: Node<'_>) -> bool {
    match node {
        Node::Root(schema) | Node::Schema(schema) => schema.get("properties").is_some(),
        _ => false,
    }
}

/// The warning for `expression` checked against each of `kinds` (`object` and `oldObject` of
/// the kind) and `params` (the paramKind's schema, if any): one block per kind that selects
/// fields its schema does not define, as Kubernetes writes them; `None` when every kind
/// defines every field selected, or the expression does not parse (compiling it reports that).
pub fn check(expression: &str, kinds: &[CheckedKind], params: Option<&Value>) -> Option<String> {
    let parsed = Parser::new()
        .enable_optional_syntax(true)
        .parse(expression)
        .ok()?;
    let blocks: Vec<String> = kinds
        .iter()
        .filter_map(|kind| {
            let mut walk = Walk {
                variables: HashMap::new(),
                undefined: Vec::new(),
            };
            for root in ["object", "oldObject"] {
                walk.variables.insert(root.into(), Node::Root(&kind.schema));
            }
            if let Some(params) = params {
                walk.variables.insert("params".into(), Node::Root(params));
            }
            walk.visit(&parsed);
            if walk.undefined.is_empty() {
                return None;
            }
            let errors = located(expression, &walk.undefined);
            Some(format!("{}: {}", kind.label, errors.join("\n")))
        })
        .collect();
    (!blocks.is_empty()).then(|| blocks.join("\n"))
}

/// Kubernetes' text for each undefined field, located at the `.` that selects it (the n-th
/// undefined selection of a name at its n-th selection in the text):
/// `ERROR: <input>:1:7: undefined field 'replicas'`, the line, and a caret under the `.`.
fn located(expression: &str, undefined: &[String]) -> Vec<String> {
    let mut used: HashMap<&str, usize> = HashMap::new();
    undefined
        .iter()
        .map(|field| {
            let nth = used.entry(field.as_str()).or_default();
            let offset = selections(expression, field).nth(*nth);
            *nth += 1;
            let Some(offset) = offset else {
                return format!("ERROR: <input>: undefined field '{field}'");
            };
            let line_start = expression[..offset].rfind('\n').map_or(0, |i| i + 1);
            let line_no = expression[..offset].matches('\n').count() + 1;
            let line = expression[line_start..].lines().next().unwrap_or_default();
            let column = expression[line_start..offset].chars().count() + 1;
            format!(
                "ERROR: <input>:{line_no}:{column}: undefined field '{field}'\n | {line}\n | {}^",
                ".".repeat(column - 1)
            )
        })
        .collect()
}

/// The byte offsets of each `.field` (or `.?field`, `[` + quoted field) selection in the text.
fn selections<'t>(expression: &'t str, field: &'t str) -> impl Iterator<Item = usize> + 't {
    let bytes = expression.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    expression.match_indices(field).filter_map(move |(at, _)| {
        let end = at + field.len();
        if end < bytes.len() && is_ident(bytes[end]) {
            return None;
        }
        let before = expression[..at].trim_end();
        let before = before.strip_suffix('?').unwrap_or(before).trim_end();
        before.ends_with('.').then(|| before.len() - 1)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment() -> CheckedKind {
        CheckedKind::new(
            "apps",
            "v1",
            "Deployment",
            json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "replicas": {"type": "integer"},
                    "template": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "containers": {"type": "array", "items": {"type": "object", "properties": {
                                "name": {"type": "string"}, "image": {"type": "string"}}}}}}}},
                    "selector": {"type": "object", "properties": {
                        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}),
        )
    }

    #[test]
    fn a_misspelt_field_is_reported_as_kubernetes_words_it() {
        assert_eq!(
            check("object.replicas > 1", &[deployment()], None).as_deref(),
            Some(
                "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^"
            )
        );
        let two = [
            deployment(),
            CheckedKind::new("apps", "v1", "ReplicaSet", deployment().schema),
        ];
        let warning = check("object.replicas > 1", &two, None).unwrap();
        assert_eq!(warning.lines().count(), 6, "{warning}");
        assert!(warning.contains("\napps/v1, Kind=ReplicaSet: ERROR: <input>:1:7:"));
    }

    #[test]
    fn defined_fields_maps_lists_metadata_and_unknown_parts_pass() {
        for ok in [
            "object.spec.replicas <= 5",
            "has(object.spec.replicas) && oldObject.spec.replicas >= 0",
            "object.spec.template.spec.containers.all(c, c.image.startsWith('registry/'))",
            "object.spec.template.spec.containers[0].name != ''",
            "object.spec.selector.matchLabels.app == 'x'",
            "object.spec.selector.matchLabels['app'] == 'x'",
            "object.spec.extra.anything.below == 1",
            "object.metadata.name.startsWith('a') && object.metadata.labels.team != ''",
            "object.kind == 'Deployment' && request.userInfo.username != ''",
            "variables.foo.bar && params.x == 1",
            "object.spec.?replicas.orValue(1) > 0",
            "[1, 2].exists(x, x > 1) && {'a': object.spec.replicas}.size() == 1",
        ] {
            assert_eq!(check(ok, &[deployment()], None), None, "{ok}");
        }
        // Not parseable: compiling the policy reports it, not the type check.
        assert_eq!(check("object.spec.(", &[deployment()], None), None);
    }

    #[test]
    fn undefined_fields_anywhere_are_found_and_located() {
        let kinds = [deployment()];
        let warning = |e: &str| check(e, &kinds, None).unwrap_or_default();
        assert!(warning("object.spec.template.spec.containers.all(c, c.imag != '')")
            .contains("undefined field 'imag'\n | object.spec.template.spec.containers.all(c, c.imag != '')\n | .............................................^"));
        assert!(
            warning("has(object.spec.replica)").contains("<input>:1:16: undefined field 'replica'")
        );
        assert!(warning("object.metadata.lables.x == 'y'").contains("undefined field 'lables'"));
        assert!(warning("object.spec.replicas > 1 &&\n  object.spec.paused").contains(
            "ERROR: <input>:2:14: undefined field 'paused'\n |   object.spec.paused\n | .............^"
        ));
        // Both misspellings, each at its own place.
        let both = warning("object.spec.foo == 1 || object.spec.foo == 2");
        assert!(
            both.contains("<input>:1:12:") && both.contains("<input>:1:36:"),
            "{both}"
        );
        // params against its kind's schema.
        let params = json!({"type": "object", "properties": {"maxReplicas": {"type": "integer"}}});
        let found = check(
            "object.spec.replicas <= params.maxReplica",
            &kinds,
            Some(&params),
        );
        assert!(found.unwrap().contains("undefined field 'maxReplica'"));
    }
}
