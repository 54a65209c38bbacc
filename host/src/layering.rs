//! The crate graph the docs draw (this crate's documentation and docs/operations.md) is the one
//! the Cargo.toml files declare: a test reads both and fails when they disagree.

use std::collections::BTreeMap;
use std::path::Path;

/// Each server crate (its folder's name) and the server crates it depends on, as a graph.
type Graph = BTreeMap<String, Vec<String>>;

/// The workspace's server crates (`strategy-host` and `strategy-host-*`, not the end-to-end
/// tests) and their direct `[dependencies]` among them, named without the prefix.
fn declared(workspace: &Path) -> Graph {
    let root = std::fs::read_to_string(workspace.join("Cargo.toml")).expect("workspace manifest");
    let members = root
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("a members list");
    let mut graph = Graph::new();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')) {
        let Ok(manifest) = std::fs::read_to_string(workspace.join(member).join("Cargo.toml"))
        else {
            continue;
        };
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .map(|n| n.trim_end_matches('"'))
            .unwrap_or_default();
        let short = match name {
            "strategy-host" => "host",
            "strategy-host-e2e" => continue,
            n => match n.strip_prefix("strategy-host-") {
                Some(short) => short,
                None => continue,
            },
        };
        let mut deps: Vec<String> = manifest
            .split("\n[dependencies]\n")
            .nth(1)
            .map(|section| section.split("\n[").next().unwrap_or_default())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix("strategy-host-"))
            .filter_map(|l| l.split(['.', ' ', '=']).next())
            .map(String::from)
            .collect();
        deps.sort();
        graph.insert(short.to_owned(), deps);
    }
    graph
}

/// The graph a document draws: the lines `crate → dependency …` of its first fenced block
/// after `marker`.
fn drawn(text: &str, marker: &str) -> Graph {
    let after = text.split(marker).nth(1).expect("the graph's marker");
    let block = after
        .split("```")
        .nth(1)
        .expect("a fenced block after the marker");
    block
        .lines()
        .map(|l| l.trim_start_matches("//!").trim())
        .filter_map(|l| l.split_once('→'))
        .map(|(name, deps)| {
            let mut deps: Vec<String> = deps.split_whitespace().map(String::from).collect();
            deps.sort();
            (name.trim().to_owned(), deps)
        })
        .collect()
}

/// Where every drawing of the graph starts.
const MARKER: &str = "crate graph (each server crate → the server crates it depends on)";

#[test]
fn the_documented_crate_graph_is_the_declared_one() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let declared = declared(workspace);
    assert!(declared.len() > 10, "server crates found: {declared:?}");
    for doc in ["host/src/lib.rs", "docs/operations.md"] {
        let text = std::fs::read_to_string(workspace.join(doc)).unwrap();
        let drawn = drawn(&text, MARKER);
        let lines = |g: &Graph| -> Vec<String> {
            g.iter()
                .map(|(k, v)| format!("{k:<14} → {}", v.join(" ")))
                .collect()
        };
        assert_eq!(
            lines(&drawn),
            lines(&declared),
            "{doc} draws another crate graph than the Cargo.toml files declare; the declared one:\n{}",
            lines(&declared).join("\n")
        );
    }
}
