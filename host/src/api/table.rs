//! Server-side printing: `meta.k8s.io/v1` Tables for `Accept: application/json;as=Table;
//! g=meta.k8s.io;v=v1`, with the columns and cells Kubernetes' CRD table convertor prints.

use serde_json::{json, Value};

use super::jsonpath;
use crate::registry::definition::{PrinterColumn, ResourceDefinition};
use crate::registry::system_fields::{now_seconds, parse_rfc3339};

/// True when the Accept header asks for a Table.
pub(crate) fn wants_table(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|part| {
            let p: Vec<&str> = part.split(';').map(str::trim).collect();
            p.contains(&"as=Table")
                && !p
                    .iter()
                    .any(|x| x.starts_with("v=") && *x != "v=v1" && *x != "v=v1beta1")
        })
    })
}

const CREATION_TIMESTAMP: &str = ".metadata.creationTimestamp";

/// The default `Age` column.
fn age() -> PrinterColumn {
    PrinterColumn {
        name: "Age".into(),
        type_: "date".into(),
        format: String::new(),
        description: "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
        priority: 0,
        json_path: CREATION_TIMESTAMP.into(),
        count_paths: Vec::new(),
        template: String::new(),
    }
}

/// The columns of `version`: `Name`, then, for a custom resource, its declared
/// additionalPrinterColumns, or `Age` alone when it declares none (Kubernetes'
/// `serveDefaultColumnsIfEmpty`). Built-in resources follow Kubernetes' built-in printers
/// instead, which end with `Age` unless a column already shows the creation time.
fn columns(def: &ResourceDefinition, version: &str) -> Vec<PrinterColumn> {
    let mut cols = vec![PrinterColumn {
        name: "Name".into(),
        type_: "string".into(),
        format: "name".into(),
        description: "Name must be unique within a namespace.".into(),
        priority: 0,
        json_path: ".metadata.name".into(),
        count_paths: Vec::new(),
        template: String::new(),
    }];
    let declared = def
        .version(version)
        .map(|v| v.printer_columns.clone())
        .unwrap_or_default();
    if def.builtin {
        let shows_creation = declared.iter().any(|c| c.json_path == CREATION_TIMESTAMP);
        cols.extend(declared);
        if !shows_creation {
            cols.push(age());
        }
    } else if declared.is_empty() {
        cols.push(age());
    } else {
        cols.extend(declared.into_iter().map(|mut c| {
            if c.description.is_empty() {
                c.description = format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    c.json_path
                );
            }
            c
        }));
    }
    cols
}

/// Kubernetes' `duration.HumanDuration`.
pub(crate) fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86_400);
    let y = d / 365;
    match () {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 => {
            if s % 60 == 0 {
                format!("{m}m")
            } else {
                format!("{m}m{}s", s % 60)
            }
        }
        _ if h < 3 => format!("{m}m"),
        _ if h < 8 => {
            if m % 60 == 0 {
                format!("{h}h")
            } else {
                format!("{h}h{}m", m % 60)
            }
        }
        _ if h < 48 => format!("{h}h"),
        _ if h < 192 => {
            if h % 24 == 0 {
                format!("{d}d")
            } else {
                format!("{d}d{}h", h % 24)
            }
        }
        _ if y < 2 => format!("{d}d"),
        _ if y < 8 => {
            if d % 365 == 0 {
                format!("{y}y")
            } else {
                format!("{y}y{}d", d % 365)
            }
        }
        _ => format!("{y}y"),
    }
}

/// One cell, as Kubernetes' table convertor computes it: the first value the column's JSONPath
/// selects (none → null); a `string` column prints it as text, other types keep a value of
/// their type and are null otherwise.
fn cell(obj: &Value, col: &PrinterColumn) -> Value {
    if !col.count_paths.is_empty() {
        let count: usize = col
            .count_paths
            .iter()
            .map(|p| jsonpath::find(obj, p).len())
            .sum();
        return Value::from(count);
    }
    if !col.template.is_empty() {
        let items: Vec<String> = jsonpath::find(obj, &col.json_path)
            .into_iter()
            .map(|item| fill_template(item, &col.template))
            .collect();
        return Value::String(items.join(", "));
    }
    let Some(v) = jsonpath::find(obj, &col.json_path).first().copied() else {
        return Value::Null;
    };
    match (col.type_.as_str(), v) {
        ("string", v) => Value::String(text(v)),
        ("integer", Value::Number(n)) => n
            .as_i64()
            // A float is truncated, as Go's int64(f).
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("date", Value::String(s)) => Value::String(match parse_rfc3339(s) {
            Some(t) => human_duration(now_seconds() - t),
            None => "<invalid>".into(),
        }),
        _ => Value::Null,
    }
}

/// `template` with each `{path}` replaced by the first value `path` selects in `item` (nothing
/// when it selects none).
fn fill_template(item: &Value, template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let path = &rest[open + 1..open + close];
        if let Some(v) = jsonpath::find(item, path).first() {
            out.push_str(&text(v));
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

/// A value as client-go's JSONPath printer writes it: lists and maps as compact JSON (Go's
/// `json.Marshal`: sorted keys, `<`, `>` and `&` escaped), scalars as Go's `fmt.Fprint`, and
/// null as `<no value>`.
fn text(v: &Value) -> String {
    match v {
        Value::Null => "<no value>".into(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_f64() => n.as_f64().map_or_else(|| n.to_string(), go_float),
        Value::Number(n) => n.to_string(),
        Value::Array(_) | Value::Object(_) => serde_json::to_string(v)
            .unwrap_or_default()
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029"),
    }
}

/// Go's `%v` of a float64: the shortest digits, in exponent form (`1e+06`) when the exponent
/// is below -4 or at least 6.
fn go_float(f: f64) -> String {
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let Ok(exp) = exp.parse::<i32>() else {
        return sci;
    };
    if f == 0.0 || !(-4..6).contains(&exp) {
        if f == 0.0 {
            return "0".into();
        }
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    f.to_string()
}

/// One row per object; `include_object`: `None`, `Object` or `Metadata` (the default).
pub(crate) fn table(
    def: &ResourceDefinition,
    version: &str,
    objects: &[Value],
    list_meta: Value,
    include_object: &str,
    with_columns: bool,
) -> Value {
    let cols = columns(def, version);
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let cells: Vec<Value> = cols.iter().map(|c| cell(o, c)).collect();
            let object = match include_object {
                "None" => Value::Null,
                "Object" => o.clone(),
                _ => json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}),
            };
            json!({"cells": cells, "object": object})
        })
        .collect();
    let mut t = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "rows": rows});
    if with_columns {
        t["columnDefinitions"] = cols
            .iter()
            .map(|c| json!({"name": c.name, "type": if c.type_ == "date" { "string" } else { c.type_.as_str() }, "format": c.format, "description": c.description, "priority": c.priority}))
            .collect();
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A definition from a CRD with these printer columns (as their CRDs declare them).
    fn crd(group: &str, kind: &str, columns: Value) -> ResourceDefinition {
        let plural = format!("{}s", kind.to_lowercase());
        ResourceDefinition::from_crd(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "kind": kind},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "additionalPrinterColumns": columns,
                                   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        }))
        .unwrap()
    }

    fn names(t: &Value) -> Vec<&str> {
        t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect()
    }

    fn row(def: &ResourceDefinition, obj: Value) -> (Value, Vec<Value>) {
        let t = table(def, "v1", &[obj], json!({}), "None", true);
        let cells = t["rows"][0]["cells"].as_array().unwrap().clone();
        (t, cells)
    }

    fn meta(name: &str) -> Value {
        json!({"name": name, "creationTimestamp": "2020-01-01T00:00:00Z"})
    }

    #[test]
    fn argo_cd_application_declares_no_age() {
        let def = crd(
            "argoproj.io",
            "Application",
            json!([
                {"name": "Sync Status", "type": "string", "jsonPath": ".status.sync.status"},
                {"name": "Health Status", "type": "string", "jsonPath": ".status.health.status"},
                {"name": "Revision", "type": "string", "jsonPath": ".status.sync.revision", "priority": 10},
                {"name": "Project", "type": "string", "jsonPath": ".spec.project", "priority": 10}
            ]),
        );
        let (t, cells) = row(
            &def,
            json!({"metadata": meta("guestbook"), "spec": {"project": "default"},
                   "status": {"sync": {"status": "Synced", "revision": "53e28ff"}}}),
        );
        assert_eq!(
            names(&t),
            [
                "Name",
                "Sync Status",
                "Health Status",
                "Revision",
                "Project"
            ]
        );
        assert_eq!(
            cells,
            [
                json!("guestbook"),
                json!("Synced"),
                Value::Null,
                json!("53e28ff"),
                json!("default")
            ]
        );
        assert_eq!(t["columnDefinitions"][4]["priority"], 10);
        assert_eq!(
            t["columnDefinitions"][1]["description"],
            "Custom resource definition column (in JSONPath format): .status.sync.status"
        );
    }

    #[test]
    fn gateway_api_httproute_prints_lists_as_json() {
        let def = crd(
            "gateway.networking.k8s.io",
            "HTTPRoute",
            json!([
                {"name": "Hostnames", "type": "string", "jsonPath": ".spec.hostnames"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
            ]),
        );
        let (t, cells) = row(
            &def,
            json!({"metadata": meta("web"), "spec": {"hostnames": ["example.com", "www.example.com"]}}),
        );
        assert_eq!(names(&t), ["Name", "Hostnames", "Age"]);
        assert_eq!(cells[1], json!(r#"["example.com","www.example.com"]"#));
        // Created in 2020: years old, printed as a duration rather than the timestamp.
        assert!(cells[2].as_str().unwrap().contains('y'), "{}", cells[2]);
    }

    #[test]
    fn keda_columns_print_the_first_match() {
        let scaled_object = crd(
            "keda.sh",
            "ScaledObject",
            json!([
                {"name": "ScaleTargetKind", "type": "string", "jsonPath": ".status.scaleTargetKind"},
                {"name": "ScaleTargetName", "type": "string", "jsonPath": ".spec.scaleTargetRef.name"},
                {"name": "Min", "type": "integer", "jsonPath": ".spec.minReplicaCount"},
                {"name": "Max", "type": "integer", "jsonPath": ".spec.maxReplicaCount"},
                {"name": "Triggers", "type": "string", "jsonPath": ".spec.triggers[*].type"},
                {"name": "Authentication", "type": "string", "jsonPath": ".spec.triggers[*].authenticationRef.name"},
                {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                {"name": "Active", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Active\")].status"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
            ]),
        );
        let (t, cells) = row(
            &scaled_object,
            json!({"metadata": meta("worker"),
                   "spec": {"scaleTargetRef": {"name": "worker"}, "minReplicaCount": 1, "maxReplicaCount": "ten",
                            "triggers": [{"type": "cpu"}, {"type": "prometheus", "authenticationRef": {"name": "prom-auth"}}]},
                   "status": {"scaleTargetKind": "apps/v1.Deployment",
                              "conditions": [{"type": "Ready", "status": "True"}, {"type": "Active", "status": "False"}]}}),
        );
        assert_eq!(names(&t).len(), 10, "no second Age: {:?}", names(&t));
        assert_eq!(
            &cells[1..9],
            [
                json!("apps/v1.Deployment"),
                json!("worker"),
                json!(1),
                // A string where the column says integer prints nothing, as Kubernetes.
                Value::Null,
                json!("cpu"),
                json!("prom-auth"),
                json!("True"),
                json!("False"),
            ]
        );
        let trigger_auth = crd(
            "keda.sh",
            "TriggerAuthentication",
            json!([
                {"name": "PodIdentity", "type": "string", "jsonPath": ".spec.podIdentity.provider"},
                {"name": "Secret", "type": "string", "jsonPath": ".spec.secretTargetRef[*].name"},
                {"name": "Env", "type": "string", "jsonPath": ".spec.env[*].name"}
            ]),
        );
        let (t, cells) = row(
            &trigger_auth,
            json!({"metadata": meta("auth"),
                   "spec": {"secretTargetRef": [{"parameter": "user", "name": "creds", "key": "u"},
                                                {"parameter": "password", "name": "other", "key": "p"}]}}),
        );
        assert_eq!(names(&t), ["Name", "PodIdentity", "Secret", "Env"]);
        assert_eq!(cells[1..], [Value::Null, json!("creds"), Value::Null]);
    }

    #[test]
    fn default_and_builtin_columns() {
        let none = crd("example.com", "Plain", json!([]));
        assert_eq!(
            names(&row(&none, json!({"metadata": meta("p")})).0),
            ["Name", "Age"]
        );
        let ns = ResourceDefinition::namespaces();
        assert_eq!(
            names(&row(&ns, json!({"metadata": meta("d")})).0),
            ["Name", "Status", "Age"]
        );
        let crds = ResourceDefinition::custom_resource_definitions();
        assert_eq!(
            names(&row(&crds, json!({"metadata": meta("c")})).0),
            ["Name", "Created At"]
        );
    }

    #[test]
    fn builtin_template_columns_join_what_they_select() {
        let role_binding = crate::authorization::rbac::definitions()
            .into_iter()
            .find(|d| d.plural == "rolebindings")
            .unwrap();
        let (t, cells) = row(
            &role_binding,
            json!({"metadata": meta("rb"), "roleRef": {"kind": "ClusterRole", "name": "view"},
                   "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                                {"kind": "ServiceAccount", "name": "ci", "namespace": "team"}]}),
        );
        assert_eq!(
            names(&t),
            ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
        );
        assert_eq!(cells[1], json!("ClusterRole/view"));
        assert_eq!(cells[3], json!("alice, bob"));
        assert_eq!(cells[4], json!(""));
        assert_eq!(cells[5], json!("team/ci"));
        let roles = crate::authorization::rbac::definitions()
            .into_iter()
            .find(|d| d.plural == "roles")
            .unwrap();
        let (t, cells) = row(&roles, json!({"metadata": meta("r")}));
        assert_eq!(names(&t), ["Name", "Created At"]);
        assert_eq!(cells[1], json!("2020-01-01T00:00:00Z"));
    }

    #[test]
    fn cells_follow_the_column_type() {
        let col = |type_: &str| PrinterColumn {
            name: "C".into(),
            type_: type_.into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: ".v".into(),
            count_paths: Vec::new(),
            template: String::new(),
        };
        let at = |type_: &str, v: Value| cell(&json!({ "v": v }), &col(type_));
        assert_eq!(
            at("string", json!({"b": "<x>", "a": 1})),
            json!(r#"{"a":1,"b":"\u003cx\u003e"}"#)
        );
        assert_eq!(at("string", Value::Null), json!("<no value>"));
        assert_eq!(at("string", json!(true)), json!("true"));
        assert_eq!(at("string", json!(3)), json!("3"));
        assert_eq!(at("string", json!(1.5)), json!("1.5"));
        assert_eq!(at("string", json!(1e6)), json!("1e+06"));
        assert_eq!(at("string", json!(123456.0)), json!("123456"));
        assert_eq!(at("string", json!(0.00001)), json!("1e-05"));
        assert_eq!(at("integer", json!(2.7)), json!(2));
        assert_eq!(at("number", json!(2)), json!(2.0));
        assert_eq!(at("boolean", json!("yes")), Value::Null);
        assert_eq!(at("date", json!("yesterday")), json!("<invalid>"));
        assert_eq!(at("date", json!(5)), Value::Null);
        assert_eq!(cell(&json!({}), &col("string")), Value::Null);
    }

    #[test]
    fn durations_and_accept() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(185), "3m5s");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(3 * 86_400), "3d");
        assert!(wants_table(Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        )));
        assert!(!wants_table(Some("application/json")));
    }
}
