//! Server-side printing: `meta.k8s.io/v1` Tables for `Accept: application/json;as=Table;
//! g=meta.k8s.io;v=v1`, with the columns and cells Kubernetes' CRD table convertor prints.

use serde_json::{json, Value};

use super::jsonpath;
use strategy_host_registry::definition::{PrinterColumn, ResourceDefinition};
use strategy_host_registry::system_fields::{now_seconds, parse_rfc3339};

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

/// True when the Accept header asks for nothing but a Table (no plain form to fall back to).
pub(crate) fn only_table(accept: Option<&str>) -> bool {
    wants_table(accept)
        && accept.is_some_and(|a| a.split(',').all(|part| part.contains("as=Table")))
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
        absent: String::new(),
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
        absent: String::new(),
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
        _ if m < 10 => units(m, 'm', s % 60, 's'),
        _ if h < 3 => format!("{m}m"),
        _ if h < 8 => units(h, 'h', m % 60, 'm'),
        _ if h < 48 => format!("{h}h"),
        _ if h < 192 => units(d, 'd', h % 24, 'h'),
        _ if y < 2 => format!("{d}d"),
        _ if y < 8 => units(y, 'y', d % 365, 'd'),
        _ => format!("{y}y"),
    }
}

/// `5m30s`: a count of a unit and of the next smaller one, which is left out when zero (`5m`).
fn units(count: i64, unit: char, rest: i64, rest_unit: char) -> String {
    if rest == 0 {
        format!("{count}{unit}")
    } else {
        format!("{count}{unit}{rest}{rest_unit}")
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
    let selected = jsonpath::find(obj, &col.json_path);
    if !col.absent.is_empty() && selected.iter().all(|v| v.is_null()) {
        return Value::String(col.absent.clone());
    }
    if !col.template.is_empty() {
        let items: Vec<String> = selected
            .into_iter()
            .map(|item| fill_template(item, &col.template))
            .collect();
        return Value::String(items.join(", "));
    }
    let Some(v) = selected.first().copied() else {
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
/// when it selects none; `{@}` is `item`; `{:.path}` writes `:` only before a value).
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
        // Text before the path's `.` is written only when the path selects a value
        // (`{:.nodePort}`); `{@}` is the item itself (a list of scalars).
        let (prefix, path) = path.split_at(path.find(['.', '@']).unwrap_or(0));
        if path == "@" {
            out.push_str(&text(item));
        } else if let Some(v) = jsonpath::find(item, path).first() {
            out.push_str(prefix);
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
mod tests;
