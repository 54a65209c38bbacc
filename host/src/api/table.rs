//! Server-side printing: `meta.k8s.io/v1` Tables (Name, the CRD's additionalPrinterColumns,
//! Age) for `Accept: application/json;as=Table;g=meta.k8s.io;v=v1`.

use serde_json::{json, Value};

use crate::registry::definition::{PrinterColumn, ResourceDefinition};
use crate::registry::system_fields::{now_seconds, parse_rfc3339};

/// True when the Accept header asks for a Table.
pub fn wants_table(accept: Option<&str>) -> bool {
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

fn columns(def: &ResourceDefinition, version: &str) -> Vec<PrinterColumn> {
    let mut cols = vec![PrinterColumn {
        name: "Name".into(),
        type_: "string".into(),
        format: "name".into(),
        description: "Name must be unique within a namespace.".into(),
        priority: 0,
        json_path: ".metadata.name".into(),
    }];
    let extra = def
        .version(version)
        .map(|v| v.printer_columns.clone())
        .unwrap_or_default();
    let has_age = extra
        .iter()
        .any(|c| c.json_path == ".metadata.creationTimestamp");
    cols.extend(extra);
    if !has_age {
        cols.push(PrinterColumn {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        });
    }
    cols
}

/// Evaluates a simple JSONPath (`.a.b[0].c`, `.a[?(@.type=="Ready")].status`).
pub fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    let mut cur = obj;
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            cur = cur.get(&r[..end])?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = &r[end + 1..];
            if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (field, want) = filter.split_once("==")?;
                let want = want.trim().trim_matches(|c| c == '"' || c == '\'');
                cur = cur
                    .as_array()?
                    .iter()
                    .find(|item| item.get(field.trim()).and_then(Value::as_str) == Some(want))?;
            } else {
                cur = cur.get(inner.parse::<usize>().ok()?)?;
            }
        } else {
            return None;
        }
    }
    Some(cur)
}

/// Kubernetes' `duration.HumanDuration`.
pub fn human_duration(secs: i64) -> String {
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

fn cell(obj: &Value, col: &PrinterColumn) -> Value {
    let Some(v) = json_path(obj, &col.json_path) else {
        return Value::Null;
    };
    if col.type_ == "date" {
        return match v.as_str().and_then(parse_rfc3339) {
            Some(t) => Value::String(human_duration(now_seconds() - t)),
            None => Value::Null,
        };
    }
    match v {
        Value::Array(items) if col.type_ == "string" => Value::String(
            items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), String::from))
                .collect::<Vec<_>>()
                .join(","),
        ),
        other => other.clone(),
    }
}

/// One row per object; `include_object`: `None`, `Object` or `Metadata` (the default).
pub fn table(
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

    #[test]
    fn paths_and_durations() {
        let o = json!({"spec": {"a": [1, {"b": 2}]}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(json_path(&o, ".spec.a[1].b"), Some(&json!(2)));
        assert_eq!(
            json_path(&o, ".status.conditions[?(@.type==\"Ready\")].status"),
            Some(&json!("True"))
        );
        assert_eq!(json_path(&o, ".nope"), None);
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
