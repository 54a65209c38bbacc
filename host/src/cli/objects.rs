//! Reads the objects `strategy-host module test|diff` runs on: files of JSON or YAML, a file
//! holding one object, several YAML documents, or a `List` (`kind: List`, `ConfigMapList`, ...)
//! whose `items` are the objects.

use std::path::Path;

use serde::Deserialize as _;
use serde_json::Value;

use super::{Error, Result};

/// One object read from a file, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct InputObject {
    /// `FILE` when the file holds one object, else `FILE#N` (N counts from 1, across documents
    /// and list items).
    pub source: String,
    /// The object.
    pub object: Value,
}

impl InputObject {
    /// How reports name the object: `Kind/namespace/name` (`Kind/name` without a namespace),
    /// or its source when it has no name.
    pub fn display_name(&self) -> String {
        let kind = self.object["kind"].as_str().unwrap_or("?");
        let meta = &self.object["metadata"];
        match (meta["namespace"].as_str(), meta["name"].as_str()) {
            (Some(ns), Some(name)) => format!("{kind}/{ns}/{name}"),
            (None, Some(name)) => format!("{kind}/{name}"),
            _ => format!("{kind} ({})", self.source),
        }
    }
}

/// Reads every object in the file at `path`.
///
/// # Errors
///
/// [`Error::ReadFile`] when the file cannot be read, [`Error::Parse`] when it is neither JSON
/// nor YAML, holds something other than objects, or holds none.
pub fn read_objects(path: &Path) -> Result<Vec<InputObject>> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::ReadFile {
        path: path.into(),
        source,
    })?;
    parse_objects(&path.display().to_string(), &text)
}

/// Parses `text` (the contents of `file`) into objects.
///
/// # Errors
///
/// As [`read_objects`], [`Error::Parse`].
pub fn parse_objects(file: &str, text: &str) -> Result<Vec<InputObject>> {
    let parse = |reason: String| Error::Parse {
        file: file.to_owned(),
        reason,
    };
    let documents: Vec<Value> = match serde_json::from_str::<Value>(text) {
        Ok(v) => vec![v],
        // YAML is a superset of JSON: a file that is not JSON is read as YAML documents.
        Err(_) => {
            let mut docs = Vec::new();
            for doc in serde_yaml::Deserializer::from_str(text) {
                let v = Value::deserialize(doc).map_err(|e| parse(e.to_string()))?;
                if !v.is_null() {
                    docs.push(v);
                }
            }
            docs
        }
    };
    let mut objects = Vec::new();
    for doc in documents {
        match doc {
            Value::Object(ref map) if is_list(map) => {
                let Some(Value::Array(items)) = map.get("items") else {
                    return Err(parse("a List needs an `items` array".into()));
                };
                objects.extend(items.iter().cloned());
            }
            Value::Object(_) => objects.push(doc),
            other => {
                return Err(parse(format!(
                    "expected an object (with apiVersion and kind), found {}",
                    type_name(&other)
                )));
            }
        }
    }
    if objects.is_empty() {
        return Err(parse("no objects in the file".into()));
    }
    for (i, o) in objects.iter().enumerate() {
        if !o["apiVersion"].is_string() || !o["kind"].is_string() {
            return Err(parse(format!("object {} has no apiVersion or kind", i + 1)));
        }
    }
    let one = objects.len() == 1;
    Ok(objects
        .into_iter()
        .enumerate()
        .map(|(i, object)| InputObject {
            source: if one {
                file.to_owned()
            } else {
                format!("{file}#{}", i + 1)
            },
            object,
        })
        .collect())
}

/// `kind: List` or `FooList` with an `items` field: a list of objects, not one.
fn is_list(map: &serde_json::Map<String, Value>) -> bool {
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    kind.ends_with("List") && map.contains_key("items")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn names(objects: &[InputObject]) -> Vec<(String, String)> {
        objects
            .iter()
            .map(|o| (o.source.clone(), o.display_name()))
            .collect()
    }

    #[test]
    fn one_json_object_is_named_by_its_file() {
        let objs = parse_objects(
            "a.json",
            r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}"#,
        )
        .unwrap();
        assert_eq!(names(&objs), [("a.json".into(), "ConfigMap/ns/a".into())]);
    }

    #[test]
    fn several_yaml_documents_are_several_objects() {
        let text = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# nothing\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: v}\n";
        let objs = parse_objects("x.yaml", text).unwrap();
        assert_eq!(
            names(&objs),
            [
                ("x.yaml#1".into(), "ConfigMap/a".into()),
                ("x.yaml#2".into(), "ConfigMap/b".into())
            ]
        );
        assert_eq!(objs[1].object["data"], json!({"k": "v"}));
    }

    #[test]
    fn a_list_is_its_items_in_json_and_yaml() {
        let json = r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}]}"#;
        let yaml = "apiVersion: v1\nkind: ConfigMapList\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
        assert_eq!(
            names(&parse_objects("l.json", json).unwrap()),
            [
                ("l.json#1".into(), "ConfigMap/a".into()),
                ("l.json#2".into(), "ConfigMap/b".into())
            ]
        );
        let objs = parse_objects("l.yaml", yaml).unwrap();
        assert_eq!(objs.len(), 3);
        assert_eq!(objs[2].display_name(), "ConfigMap/c");
    }

    #[test]
    fn what_is_not_objects_is_refused_with_the_reason() {
        let err = |file: &str, text: &str| parse_objects(file, text).unwrap_err().to_string();
        assert_eq!(
            err("e.yaml", "# only a comment\n"),
            "e.yaml: no objects in the file"
        );
        assert_eq!(
            err("s.yaml", "just a string\n"),
            "s.yaml: expected an object (with apiVersion and kind), found a string"
        );
        assert_eq!(
            err("k.yaml", "metadata: {name: a}\n"),
            "k.yaml: object 1 has no apiVersion or kind"
        );
        assert!(err("b.yaml", "a: [unclosed\n").starts_with("b.yaml: "));
        assert_eq!(
            err("l.yaml", "apiVersion: v1\nkind: List\nitems: 3\n"),
            "l.yaml: a List needs an `items` array"
        );
    }
}
