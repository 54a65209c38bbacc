//! Sets of field paths, as Kubernetes records them in `managedFields` (`fieldsType: FieldsV1`):
//! a trie whose edges are path elements in FieldsV1's spelling — `f:name` (a field or map key),
//! `k:{"name":"web"}` (a list item by its map keys), `v:"a"` (a set item by value) — and whose
//! nodes say whether the node itself is owned (FieldsV1's `"."`, or a leaf's `{}`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One path element, spelled as in FieldsV1.
pub type Element = String;

/// A set of field paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    /// The path ending here is in the set.
    own: bool,
    children: BTreeMap<Element, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the set has no paths.
    pub fn is_empty(&self) -> bool {
        !self.own && self.children.values().all(FieldSet::is_empty)
    }

    /// Adds the path `path`.
    pub fn insert(&mut self, path: &[Element]) {
        match path.split_first() {
            None => self.own = true,
            Some((first, rest)) => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is in the set.
    pub fn contains(&self, path: &[Element]) -> bool {
        match path.split_first() {
            None => self.own,
            Some((first, rest)) => self.children.get(first).is_some_and(|c| c.contains(rest)),
        }
    }

    /// Whether the set has paths strictly below `path`.
    pub fn has_children(&self, path: &[Element]) -> bool {
        match path.split_first() {
            None => self.children.values().any(|c| !c.is_empty()),
            Some((first, rest)) => self
                .children
                .get(first)
                .is_some_and(|c| c.has_children(rest)),
        }
    }

    /// Every path in the set, in order.
    pub fn paths(&self) -> Vec<Vec<Element>> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<Element>, out: &mut Vec<Vec<Element>>) {
        if self.own {
            out.push(prefix.clone());
        }
        for (k, child) in &self.children {
            prefix.push(k.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.own |= other.own;
        for (k, child) in &other.children {
            let merged = match out.children.get(k) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(k.clone(), merged);
        }
        out
    }

    /// The paths in `self` and not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            own: self.own && !other.own,
            children: BTreeMap::new(),
        };
        for (k, child) in &self.children {
            let rest = match other.children.get(k) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(k.clone(), rest);
            }
        }
        out
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            own: self.own && other.own,
            children: BTreeMap::new(),
        };
        for (k, child) in &self.children {
            if let Some(theirs) = other.children.get(k) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    out.children.insert(k.clone(), both);
                }
            }
        }
        out
    }

    /// The set in FieldsV1 form (`{"f:spec":{"f:replicas":{}}}`).
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.own && !self.children.is_empty() {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (k, child) in &self.children {
            if !child.is_empty() {
                map.insert(k.clone(), child.to_fields_v1());
            }
        }
        Value::Object(map)
    }

    /// Reads a FieldsV1 value.
    ///
    /// # Errors
    /// A value that is not FieldsV1 (not an object, or a key that is no path element).
    pub fn from_fields_v1(v: &Value) -> Result<Self, NotFieldsV1> {
        let map = v.as_object().ok_or(NotFieldsV1::NotAnObject)?;
        let mut set = FieldSet {
            own: map.is_empty(),
            children: BTreeMap::new(),
        };
        for (k, child) in map {
            if k == "." {
                set.own = true;
                continue;
            }
            if !(k.starts_with("f:")
                || k.starts_with("k:")
                || k.starts_with("v:")
                || k.starts_with("i:"))
            {
                return Err(NotFieldsV1::Element(k.clone()));
            }
            set.children.insert(k.clone(), Self::from_fields_v1(child)?);
        }
        Ok(set)
    }
}

/// A value that is not FieldsV1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotFieldsV1 {
    /// A scalar or list where an object belongs.
    #[error("fieldsV1 must be an object")]
    NotAnObject,
    /// A key that is no `f:`, `k:`, `v:` or `i:` path element (nor `.`).
    #[error("{0:?} is not a FieldsV1 path element")]
    Element(String),
}

/// A path as Kubernetes prints it in conflict messages: `.spec.containers[name="web"].image`.
pub fn display_path(path: &[Element]) -> String {
    let mut out = String::new();
    for e in path {
        if let Some(name) = e.strip_prefix("f:") {
            out.push('.');
            out.push_str(name);
        } else if let Some(keys) = e.strip_prefix("k:") {
            let parsed: Map<String, Value> = serde_json::from_str(keys).unwrap_or_default();
            let inner: Vec<String> = parsed.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push_str(&format!("[{}]", inner.join(",")));
        } else if let Some(value) = e.strip_prefix("v:") {
            out.push_str(&format!("[={value}]"));
        } else if let Some(i) = e.strip_prefix("i:") {
            out.push_str(&format!("[{i}]"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn p(parts: &[&str]) -> Vec<Element> {
        parts.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn set_algebra() {
        let mut a = FieldSet::new();
        a.insert(&p(&["f:spec", "f:replicas"]));
        a.insert(&p(&["f:spec", "f:paused"]));
        let mut b = FieldSet::new();
        b.insert(&p(&["f:spec", "f:replicas"]));
        b.insert(&p(&["f:metadata", "f:labels", "f:app"]));
        assert_eq!(a.intersection(&b).paths(), [p(&["f:spec", "f:replicas"])]);
        assert_eq!(a.difference(&b).paths(), [p(&["f:spec", "f:paused"])]);
        assert_eq!(a.union(&b).paths().len(), 3);
        assert!(a.difference(&a).is_empty());
        assert!(b.contains(&p(&["f:metadata", "f:labels", "f:app"])));
        assert!(!b.contains(&p(&["f:metadata", "f:labels"])));
    }

    #[test]
    fn fields_v1_round_trips() {
        let v = json!({"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}, "f:data": {"f:a": {}}});
        let set = FieldSet::from_fields_v1(&v).unwrap();
        assert!(set.contains(&p(&["f:spec", "f:containers", "k:{\"name\":\"web\"}"])));
        assert!(set.contains(&p(&["f:data", "f:a"])));
        assert_eq!(set.to_fields_v1(), v);
        assert!(FieldSet::from_fields_v1(&json!({"spec": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!(1)).is_err());
    }

    #[test]
    fn paths_print_as_kubernetes_does() {
        assert_eq!(
            display_path(&p(&[
                "f:spec",
                "f:containers",
                "k:{\"name\":\"web\"}",
                "f:image"
            ])),
            ".spec.containers[name=\"web\"].image"
        );
        assert_eq!(
            display_path(&p(&["f:spec", "f:finalizers", "v:\"a\""])),
            ".spec.finalizers[=\"a\"]"
        );
    }
}
