//! Prints the reports of `strategy-host module test|diff`: a table for people (one row per
//! object and phase, details on continuation lines) or JSON for scripts.

use serde::Serialize;
use serde_json::{json, Value};

use super::module::{patch_from_input, Case};
use super::Format;
use crate::wasm::rollout::{Difference, Outcome};

/// What one module did with one object in one phase.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseRow {
    /// The object, `Kind/namespace/name`.
    pub object: String,
    /// Its file (`FILE#N` for the N-th object of a file holding several).
    pub source: String,
    /// `create`, `update`, `delete` or `update from SOURCE`.
    pub phase: String,
    /// `admitted`, `rejected` or `failed`.
    pub outcome: &'static str,
    /// The JSON patch from the input object to the object after the phase (create and update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<Value>,
    /// Why the write was refused, one line per cause (`field: detail`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<String>,
    /// The field errors, as in a Kubernetes `Status`'s causes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub field_errors: Vec<Value>,
    /// The warnings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Why the call failed (trap, deadline, memory, bad output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

impl PhaseRow {
    /// The row of `case`'s `outcome`.
    pub fn new(case: &Case, outcome: &Outcome) -> Self {
        let (verdict, failure, field_errors) = match &outcome.result {
            Err(e) => ("failed", Some(e.reason.clone()), Vec::new()),
            Ok(a) => (
                if outcome.rejects() {
                    "rejected"
                } else {
                    "admitted"
                },
                None,
                a.field_errors
                    .iter()
                    .map(|e| json!({"type": e.kind.cause_type(), "field": e.field, "message": e.message()}))
                    .collect(),
            ),
        };
        Self {
            object: case.object.display_name(),
            source: case.object.source.clone(),
            phase: case.phase(),
            outcome: verdict,
            patch: patch_from_input(case, outcome),
            causes: outcome.causes(),
            field_errors,
            warnings: outcome.warnings().to_vec(),
            failure,
        }
    }

    fn details(&self) -> Vec<String> {
        let mut lines = self.causes.clone();
        if let Some(Value::Array(ops)) = &self.patch {
            lines.extend(ops.iter().map(patch_op));
        }
        lines.extend(self.warnings.iter().map(|w| format!("warning: {w}")));
        lines.extend(self.failure.iter().map(|f| format!("failure: {f}")));
        lines
    }
}

/// Where the new version's outcome differs from the old one's, for one object and phase.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffRow {
    /// The object, `Kind/namespace/name`.
    pub object: String,
    /// Its file.
    pub source: String,
    /// The phase.
    pub phase: String,
    /// The kind of difference (`rejects`, `admits`, `rejectsDifferently`, `changes`, `warnings`,
    /// `fails`), as rollout reports name it.
    pub difference: &'static str,
    /// What differed, as rollout reports give it (`inForce*`: the old version's; the rest: the
    /// new version's; `patch`: from the old version's object to the new version's).
    pub detail: Value,
}

impl DiffRow {
    /// The row of one difference for `case`.
    pub fn new(case: &Case, d: Difference) -> Self {
        Self {
            object: case.object.display_name(),
            source: case.object.source.clone(),
            phase: case.phase(),
            difference: d.kind.as_str(),
            detail: d.detail,
        }
    }

    fn details(&self) -> Vec<String> {
        let strings = |key: &str| -> Vec<String> {
            self.detail[key]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect()
        };
        let mut lines = Vec::new();
        lines.extend(strings("inForceCauses").iter().map(|s| format!("old: {s}")));
        lines.extend(strings("causes").iter().map(|s| format!("new: {s}")));
        for (key, version) in [("inForce", "old"), ("candidate", "new")] {
            let warnings = strings(key);
            if self.detail[key].is_array() && warnings.is_empty() {
                lines.push(format!("{version}: no warnings"));
            }
            lines.extend(warnings.iter().map(|w| format!("{version} warning: {w}")));
        }
        if let Some(ops) = self.detail["patch"].as_array() {
            lines.extend(ops.iter().map(|op| format!("new: {}", patch_op(op))));
        }
        if let Some(reason) = self.detail["reason"].as_str() {
            lines.push(format!("new failure: {reason}"));
        }
        lines
    }
}

/// One JSON patch operation on a line: `add /metadata/labels/a = "b"`, `remove /data/x`.
fn patch_op(op: &Value) -> String {
    let name = op["op"].as_str().unwrap_or("?");
    let path = op["path"].as_str().unwrap_or("");
    match (op.get("value"), op.get("from")) {
        (Some(value), _) => format!("{name} {path} = {value}"),
        (None, Some(from)) => format!("{name} {path} from {}", from.as_str().unwrap_or("")),
        (None, None) => format!("{name} {path}"),
    }
}

/// Prints `module test`'s report.
pub fn print_test(module: &str, rows: &[PhaseRow], format: Format) {
    match format {
        Format::Json => print_json(&json!({"module": module, "results": rows})),
        Format::Table => {
            print_table(
                "OUTCOME",
                rows.iter()
                    .map(|r| (&r.object, &r.phase, r.outcome, r.details())),
            );
            let count = |o: &str| rows.iter().filter(|r| r.outcome == o).count();
            println!(
                "\n{} phases: {} admitted, {} rejected, {} failed",
                rows.len(),
                count("admitted"),
                count("rejected"),
                count("failed")
            );
        }
    }
}

/// Prints `module diff`'s report (`cases`: how many phases ran).
pub fn print_diff(old: &str, new: &str, cases: usize, rows: &[DiffRow], format: Format) {
    match format {
        Format::Json => print_json(&json!({"old": old, "new": new, "differences": rows})),
        Format::Table => {
            if rows.is_empty() {
                println!("{old} and {new} agree on all {cases} phases");
                return;
            }
            print_table(
                "DIFFERENCE",
                rows.iter()
                    .map(|r| (&r.object, &r.phase, r.difference, r.details())),
            );
            let differing: std::collections::BTreeSet<_> =
                rows.iter().map(|r| (&r.source, &r.phase)).collect();
            println!(
                "\n{} of {cases} phases differ between {old} and {new}",
                differing.len()
            );
        }
    }
}

/// Prints one row per object and phase: `column`'s cell, then the row's details.
fn print_table<'a>(
    column: &str,
    rows: impl Iterator<Item = (&'a String, &'a String, &'a str, Vec<String>)>,
) {
    let table: Vec<_> = rows
        .map(|(object, phase, cell, details)| {
            ([object.clone(), phase.clone(), cell.to_owned()], details)
        })
        .collect();
    print!("{}", render(["OBJECT", "PHASE", column, "DETAILS"], &table));
}

fn print_json(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).expect("a report serializes")
    );
}

/// A table with three columns padded to their widest cell and a last column of details, the
/// first detail on the row, the others on continuation lines below it.
fn render(header: [&str; 4], rows: &[([String; 3], Vec<String>)]) -> String {
    let mut widths = [header[0].len(), header[1].len(), header[2].len()];
    for (cells, _) in rows {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: [&str; 3], detail: &str| {
        let mut s = String::new();
        for (c, w) in cells.iter().zip(widths) {
            s.push_str(&format!("{c:<w$}   "));
        }
        s.push_str(detail);
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line([header[0], header[1], header[2]], header[3]);
    for (cells, details) in rows {
        let first = details.first().map_or("", String::as_str);
        out.push_str(&line([&cells[0], &cells[1], &cells[2]], first));
        for d in details.iter().skip(1) {
            out.push_str(&line(["", "", ""], d));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_pads_columns_and_continues_details_below() {
        let rows = vec![
            (
                [
                    "ConfigMap/ns/long-name".into(),
                    "create".into(),
                    "rejected".into(),
                ],
                vec!["data[a]: bad".into(), "warning: w".into()],
            ),
            (["X/a".into(), "delete".into(), "admitted".into()], vec![]),
        ];
        assert_eq!(
            render(["OBJECT", "PHASE", "OUTCOME", "DETAILS"], &rows),
            concat!(
                "OBJECT                   PHASE    OUTCOME    DETAILS\n",
                "ConfigMap/ns/long-name   create   rejected   data[a]: bad\n",
                "                                             warning: w\n",
                "X/a                      delete   admitted\n",
            )
        );
    }

    #[test]
    fn patch_operations_read_as_one_line() {
        assert_eq!(
            patch_op(&json!({"op": "add", "path": "/metadata/labels/a~1b", "value": "x"})),
            "add /metadata/labels/a~1b = \"x\""
        );
        assert_eq!(
            patch_op(&json!({"op": "remove", "path": "/data/k"})),
            "remove /data/k"
        );
    }
}
