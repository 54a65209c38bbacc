//! [`LazyObject`]: a JSON object whose members stay unparsed until a strategy reads or changes
//! them.
//!
//! Decoding a whole object into a typed struct or a [`Value`] tree, and encoding it back, is most
//! of a strategy call when the strategy looks at a handful of fields (a Deployment's defaults
//! touch `spec` but never the pod template's containers). A `LazyObject` keeps each member as the
//! JSON text it arrived as; a read parses only the path it names, a change opens only the
//! objects on its path, and encoding copies every untouched member's text as it is.

use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// A JSON object whose members are parsed on demand (see the [module](self) documentation).
///
/// Use it as [`crate::Strategy::Object`] when a strategy reads or defaults a few fields of large
/// objects. Reads take a path of member names and parse only what the path reaches; changes open
/// the objects on their path and leave every other member's text untouched. A member that is
/// `null` reads as absent, as `Option` fields of a typed struct do.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use strategy_guest_sdk::LazyObject;
///
/// let mut obj: LazyObject = serde_json::from_str(
///     r#"{"kind":"Deployment","spec":{"replicas":null,"template":{"metadata":{"labels":{"app":"web"}}}}}"#,
/// ).unwrap();
/// let labels: Option<BTreeMap<String, String>> =
///     obj.get(&["spec", "template", "metadata", "labels"]).unwrap();
/// assert_eq!(labels.unwrap()["app"], "web");
/// assert_eq!(obj.get::<i64>(&["spec", "replicas"]).unwrap(), None);
///
/// let spec = obj.object_mut(&["spec"]).unwrap();
/// assert!(spec.insert_if_absent("replicas", 1));
/// assert!(!spec.insert_if_absent("replicas", 2));
/// assert!(obj.get::<String>(&["kind", "name"]).is_err(), "a string has no members");
/// assert_eq!(
///     serde_json::to_string(&obj).unwrap(),
///     r#"{"kind":"Deployment","spec":{"replicas":1,"template":{"metadata":{"labels":{"app":"web"}}}}}"#,
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct LazyObject {
    members: Vec<(String, Member)>,
    /// Names of the input's members the strategy removed.
    removed: Vec<String>,
}

/// One member's value, in the least parsed form that serves what was asked of it, and whether it
/// is the input's (for [`LazyObject::json_patch`]).
#[derive(Debug, Clone)]
enum Member {
    /// The input's JSON text, untouched.
    Raw(Box<RawValue>),
    /// The input's object, opened for a change below it.
    Opened(LazyObject),
    /// A value the strategy set.
    Value(Value),
    /// An object the strategy made (from an absent or `null` member, or a value it set).
    New(LazyObject),
    /// JSON text taken from another object ([`LazyObject::copy_member`]).
    Copied(Box<RawValue>),
}

/// A read or change that met a value of the wrong type on its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberError {
    path: String,
    reason: String,
}

impl MemberError {
    fn new(path: &[&str], reason: impl fmt::Display) -> Self {
        let mut reason = reason.to_string();
        // The position is within the member's own text, which means nothing to a reader.
        if let Some(at) = reason.rfind(" at line ") {
            if reason[at..].contains(" column ") {
                reason.truncate(at);
            }
        }
        Self {
            path: path.join("."),
            reason,
        }
    }

    /// The member's path, its names joined by dots (e.g. `spec.replicas`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What was wrong, e.g. `invalid type: string "3", expected i64`.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for MemberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

impl std::error::Error for MemberError {}

impl LazyObject {
    /// An empty object.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value at `path` decoded as `T`: `None` when a member on the path is absent or `null`,
    /// an error when a member on the path is not an object or the value does not decode as `T`.
    ///
    /// # Errors
    ///
    /// [`MemberError`] names the path and what was wrong with it.
    pub fn get<T: DeserializeOwned>(&self, path: &[&str]) -> Result<Option<T>, MemberError> {
        let mut node = Node::Object(self);
        for (depth, name) in path.iter().enumerate() {
            match node.child(name) {
                Ok(Some(child)) => node = child,
                Ok(None) => return Ok(None),
                Err(reason) => return Err(MemberError::new(&path[..depth], reason)),
            }
        }
        if node.is_null() {
            return Ok(None);
        }
        node.decode()
            .map(Some)
            .map_err(|e| MemberError::new(path, e))
    }

    /// Whether the value at `path` is present and not `null`.
    pub fn contains(&self, path: &[&str]) -> bool {
        let mut node = Node::Object(self);
        for name in path {
            match node.child(name) {
                Ok(Some(child)) => node = child,
                _ => return false,
            }
        }
        !node.is_null()
    }

    /// The object at `path`, opened for changes; absent or `null` members on the path become
    /// empty objects. `None` when a member on the path holds something other than an object.
    pub fn object_mut(&mut self, path: &[&str]) -> Option<&mut LazyObject> {
        let mut object = self;
        for name in path {
            let at = match object.position(name) {
                Some(at) => at,
                None => {
                    object
                        .members
                        .push(((*name).to_owned(), Member::New(Self::new())));
                    object.members.len() - 1
                }
            };
            let member = &mut object.members[at].1;
            member.open()?;
            let (Member::Opened(inner) | Member::New(inner)) = member else {
                unreachable!("opened above")
            };
            object = inner;
        }
        Some(object)
    }

    /// Sets member `name` to `value`, in place when present, else after the others.
    pub fn insert(&mut self, name: &str, value: impl Into<Value>) {
        let member = Member::Value(value.into());
        match self.position(name) {
            Some(at) => self.members[at].1 = member,
            None => self.members.push((name.to_owned(), member)),
        }
    }

    /// Sets member `name` to `value` only when it is absent or `null` (a default); true when it
    /// did.
    pub fn insert_if_absent(&mut self, name: &str, value: impl Into<Value>) -> bool {
        match self.position(name) {
            Some(at) if !self.members[at].1.node().is_null() => false,
            _ => {
                self.insert(name, value);
                true
            }
        }
    }

    /// Removes member `name`; true when it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.members.len();
        let mut input = false;
        self.members.retain(|(n, member)| {
            let keep = n != name;
            input |= !keep && matches!(member, Member::Raw(_) | Member::Opened(_));
            keep
        });
        if input && !self.removed.iter().any(|n| n == name) {
            self.removed.push(name.to_owned());
        }
        self.members.len() != before
    }

    /// Makes member `name` what it is in `other` (absent when it is absent there), copying its
    /// text without parsing it: e.g. keeping the old object's `status` on an update.
    pub fn copy_member(&mut self, other: &LazyObject, name: &str) {
        match other.position(name) {
            Some(at) => {
                let member = match &other.members[at].1 {
                    Member::Raw(text) | Member::Copied(text) => Member::Copied(text.clone()),
                    Member::Opened(object) | Member::New(object) => Member::New(object.clone()),
                    Member::Value(value) => Member::Value(value.clone()),
                };
                match self.position(name) {
                    Some(mine) => self.members[mine].1 = member,
                    None => self.members.push((name.to_owned(), member)),
                }
            }
            None => {
                self.remove(name);
            }
        }
    }

    /// The members' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(name, _)| name.as_str())
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the object has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Where member `name` is (the last one, as a parser keeps the last of duplicates).
    fn position(&self, name: &str) -> Option<usize> {
        self.members.iter().rposition(|(n, _)| n == name)
    }
}

impl Member {
    fn node(&self) -> Node<'_> {
        match self {
            Member::Raw(text) | Member::Copied(text) => Node::Raw(text),
            Member::Opened(object) | Member::New(object) => Node::Object(object),
            Member::Value(value) => Node::Value(value),
        }
    }

    /// Makes this member an object to change (`Opened` or `New`); `None`, leaving it as it is,
    /// when it is neither an object nor `null`.
    fn open(&mut self) -> Option<()> {
        let input = matches!(self, Member::Raw(_));
        let opened = match self {
            Member::Opened(_) | Member::New(_) => return Some(()),
            Member::Raw(text) | Member::Copied(text) => {
                match text.get().trim_start().as_bytes().first() {
                    Some(b'{') => {
                        let object = serde_json::from_str(text.get()).ok()?;
                        match input {
                            true => Member::Opened(object),
                            false => Member::New(object),
                        }
                    }
                    Some(b'n') => Member::New(LazyObject::new()),
                    _ => return None,
                }
            }
            Member::Value(Value::Null) => Member::New(LazyObject::new()),
            Member::Value(Value::Object(map)) => Member::New(LazyObject {
                members: std::mem::take(map)
                    .into_iter()
                    .map(|(name, value)| (name, Member::Value(value)))
                    .collect(),
                removed: Vec::new(),
            }),
            Member::Value(_) => return None,
        };
        *self = opened;
        Some(())
    }
}

/// A borrowed view of a value on a read's path.
#[derive(Clone, Copy)]
enum Node<'a> {
    Raw(&'a RawValue),
    Object(&'a LazyObject),
    Value(&'a Value),
}

impl<'a> Node<'a> {
    fn is_null(self) -> bool {
        match self {
            Node::Raw(raw) => raw.get().trim() == "null",
            Node::Object(_) => false,
            Node::Value(value) => value.is_null(),
        }
    }

    /// Member `name` of this value: `None` when this is `null` or lacks it, an error (the type
    /// met) when this is not an object.
    fn child(self, name: &str) -> Result<Option<Node<'a>>, String> {
        match self {
            Node::Object(object) => Ok(object.position(name).map(|at| object.members[at].1.node())),
            Node::Value(Value::Object(map)) => Ok(map.get(name).map(Node::Value)),
            Node::Value(Value::Null) => Ok(None),
            Node::Value(other) => Err(format!("expected an object, found {}", kind(other))),
            Node::Raw(raw) => {
                let text = raw.get();
                match text.trim_start().as_bytes().first() {
                    Some(b'{') => {
                        let mut de = serde_json::Deserializer::from_str(text);
                        let found = FindMember { name }
                            .deserialize(&mut de)
                            .map_err(|e| e.to_string())?;
                        Ok(found.map(Node::Raw))
                    }
                    Some(b'n') => Ok(None),
                    _ => {
                        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
                        Err(format!("expected an object, found {}", kind(&value)))
                    }
                }
            }
        }
    }

    fn decode<T: DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        match self {
            Node::Raw(raw) => serde_json::from_str(raw.get()),
            Node::Value(value) => T::deserialize(value),
            Node::Object(object) => serde_json::from_value(serde_json::to_value(object)?),
        }
    }
}

/// How serde_json names a value's type in its errors.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Scans a raw object for one member and borrows its text, skipping the others unparsed.
struct FindMember<'n> {
    name: &'n str,
}

impl<'de> DeserializeSeed<'de> for FindMember<'_> {
    type Value = Option<&'de RawValue>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FindMember<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(matches) = map.next_key_seed(KeyIs(self.name))? {
            // The last of duplicate members wins, as when parsing into a map.
            match matches {
                true => found = Some(map.next_value::<&RawValue>()?),
                false => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        Ok(found)
    }
}

/// Compares a member name with the one sought, without allocating it.
struct KeyIs<'n>(&'n str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<bool, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<bool, E> {
        Ok(name == self.0)
    }
}

impl Serialize for LazyObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.members.len()))?;
        for (name, member) in &self.members {
            map.serialize_entry(name, member)?;
        }
        map.end()
    }
}

impl Serialize for Member {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Member::Raw(text) | Member::Copied(text) => text.serialize(serializer),
            Member::Opened(object) | Member::New(object) => object.serialize(serializer),
            Member::Value(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for LazyObject {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_map(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = LazyObject;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LazyObject, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(name) = map.next_key::<String>()? {
            members.push((name, Member::Raw(map.next_value::<Box<RawValue>>()?)));
        }
        Ok(LazyObject {
            members,
            removed: Vec::new(),
        })
    }
}

mod patch;
#[cfg(test)]
mod tests;
