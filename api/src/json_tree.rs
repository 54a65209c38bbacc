//! One pass over a JSON body: its tree, and the paths of the fields it repeats within one object
//! (what `fieldValidation` judges), found while the tree is built instead of by a second parse.

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};
use std::fmt;

/// A JSON document as a tree (as `serde_json::from_slice` builds it: a repeated field keeps its
/// last value) with the paths of its repeated fields, in the order of their repetitions.
///
/// # Errors
/// The parser's error for malformed JSON or trailing characters, worded as serde_json's.
pub(crate) fn parse_with_duplicates(bytes: &[u8]) -> serde_json::Result<(Value, Vec<String>)> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let Node { value, repeated } = Tree.deserialize(&mut de)?;
    de.end()?;
    Ok((value, repeated.iter().map(|path| written(path)).collect()))
}

/// The problem a repeated field is, as Kubernetes words it for `fieldValidation`.
pub(crate) fn duplicate_field(path: &str) -> String {
    format!("duplicate field {path:?}")
}

/// One step of a path: an object's key or an array's index.
enum Segment {
    Key(String),
    Index(usize),
}

/// A repeated field's path, innermost segment first (each enclosing object or array adds its
/// segment as the parse returns through it; repetitions are rare, so the common case builds
/// no path at all).
type ReversedPath = Vec<Segment>;

/// A path as `fieldValidation` names it: `spec.ports[0].name`.
fn written(path: &[Segment]) -> String {
    let mut text = String::new();
    for segment in path.iter().rev() {
        match segment {
            Segment::Key(key) if text.is_empty() => text.push_str(key),
            Segment::Key(key) => {
                text.push('.');
                text.push_str(key);
            }
            Segment::Index(i) => text.push_str(&format!("[{i}]")),
        }
    }
    text
}

/// A parsed value and the repeated fields within it.
struct Node {
    value: Value,
    repeated: Vec<ReversedPath>,
}

impl Node {
    fn leaf(value: Value) -> Self {
        Self {
            value,
            repeated: Vec::new(),
        }
    }
}

/// Adds the enclosing `segment` to the paths found inside a member.
fn nest(repeated: &mut Vec<ReversedPath>, inner: Vec<ReversedPath>, segment: impl Fn() -> Segment) {
    for mut path in inner {
        path.push(segment());
        repeated.push(path);
    }
}

struct Tree;

impl<'de> DeserializeSeed<'de> for Tree {
    type Value = Node;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Tree {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Node, E> {
        Ok(Node::leaf(Value::Bool(b)))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Node, E> {
        Ok(Node::leaf(Value::Number(n.into())))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Node, E> {
        Ok(Node::leaf(Value::Number(n.into())))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Node, E> {
        Ok(Node::leaf(
            Number::from_f64(n).map_or(Value::Null, Value::Number),
        ))
    }
    fn visit_str<E>(self, s: &str) -> Result<Node, E> {
        Ok(Node::leaf(Value::String(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<Node, E> {
        Ok(Node::leaf(Value::String(s)))
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::leaf(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let mut repeated = Vec::new();
        while let Some(item) = seq.next_element_seed(Tree)? {
            let i = items.len();
            nest(&mut repeated, item.repeated, || Segment::Index(i));
            items.push(item.value);
        }
        Ok(Node {
            value: Value::Array(items),
            repeated,
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut members = Map::new();
        let mut repeated = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let member = map.next_value_seed(Tree)?;
            nest(&mut repeated, member.repeated, || Segment::Key(key.clone()));
            match members.entry(key) {
                Entry::Vacant(vacant) => {
                    vacant.insert(member.value);
                }
                Entry::Occupied(mut occupied) => {
                    occupied.insert(member.value);
                    repeated.push(vec![Segment::Key(occupied.key().clone())]);
                }
            }
        }
        Ok(Node {
            value: Value::Object(members),
            repeated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_serde_jsons() {
        for text in [
            r#"{"a":1,"b":-2,"c":1.5,"d":1e300,"e":"\u00e9\n","f":[null,true,{}],"g":{"h":[]}}"#,
            r#"[1,{"a":{"a":{"a":0}}}]"#,
            r#""text""#,
            "18446744073709551615",
            "-9223372036854775808",
            "0.1",
        ] {
            let (tree, repeated) = parse_with_duplicates(text.as_bytes()).unwrap();
            assert_eq!(tree, serde_json::from_str::<Value>(text).unwrap(), "{text}");
            assert!(repeated.is_empty());
        }
    }

    #[test]
    fn repeated_fields_keep_the_last_value_and_are_named_by_path() {
        let text =
            r#"{"a":1,"b":{"c":1,"c":2},"d":[{"e":1,"e":1}],"f":[[{"[g]":{"h":0,"h":1}}]],"a":2}"#;
        let (tree, repeated) = parse_with_duplicates(text.as_bytes()).unwrap();
        assert_eq!(tree, serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(tree["a"], 2);
        assert_eq!(repeated, vec!["b.c", "d[0].e", "f[0][0].[g].h", "a"]);
    }

    #[test]
    fn malformed_json_fails_as_serde_json_does() {
        for text in ["{", "1e400", r#"{"a":1}x"#, r#"{"a" 1}"#, "", "[1,]"] {
            let ours = parse_with_duplicates(text.as_bytes()).unwrap_err();
            let theirs = serde_json::from_str::<Value>(text).unwrap_err();
            assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(parse_with_duplicates(deep.as_bytes()).is_err());
    }
}
