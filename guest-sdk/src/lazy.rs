//! [`LazyObject`]: a JSON object whose members stay unparsed until a strategy reads or changes
//! them.
//!
//! Decoding a whole object into a typed struct or a [`Value`] tree, and encoding it back, is most
//! of a strategy call when the strategy looks at a handful of fields (a Deployment's defaults
//! touch `spec` but never the pod template's containers). A `LazyObject` keeps each member as the
//! JSON text it arrived as; a read parses only the path it names, a change opens only the
//! objects on its path, and encoding copies every untouched member's text as it is.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde::de::DeserializeOwned;
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
    /// The text this object was read from, shared with the objects opened within it: the
    /// `Input` names and `Raw` members are spans of it.
    text: Option<Arc<[u8]>>,
    members: Vec<(Name, Member)>,
    /// Names of the input's members the strategy removed.
    removed: Vec<String>,
}

/// A span of an object's text.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    /// This span's bytes of `text`.
    fn of(self, text: &[u8]) -> &[u8] {
        &text[self.start..self.end]
    }
}

impl From<Range<usize>> for Span {
    fn from(range: Range<usize>) -> Self {
        Self {
            start: range.start,
            end: range.end,
        }
    }
}

/// A member's name: the input's text when it holds no escape (the name itself), else its own.
#[derive(Debug, Clone)]
enum Name {
    Input(Span),
    Own(String),
}

/// JSON text of another object's ([`LazyObject::copy_member`]).
#[derive(Debug, Clone)]
struct Text {
    source: Arc<[u8]>,
    span: Span,
}

impl Text {
    fn bytes(&self) -> &[u8] {
        self.span.of(&self.source)
    }
}

/// One member's value, in the least parsed form that serves what was asked of it, and whether it
/// is the input's (for [`LazyObject::json_patch`]).
#[derive(Debug, Clone)]
enum Member {
    /// The input's JSON text, untouched.
    Raw(Span),
    /// The input's object, opened for a change below it.
    Opened(LazyObject),
    /// A value the strategy set.
    Value(Value),
    /// An object the strategy made (from an absent or `null` member, or a value it set).
    New(LazyObject),
    /// JSON text taken from another object ([`LazyObject::copy_member`]).
    Copied(Text),
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
                        .push((Name::Own((*name).to_owned()), Member::New(Self::new())));
                    object.members.len() - 1
                }
            };
            let LazyObject { text, members, .. } = object;
            let member = &mut members[at].1;
            member.open(text.as_ref())?;
            let (Member::Opened(inner) | Member::New(inner)) = member else {
                unreachable!("opened above")
            };
            object = inner;
        }
        Some(object)
    }

    /// Sets member `name` to `value`, in place when present, else after the others.
    pub fn insert(&mut self, name: &str, value: impl Into<Value>) {
        self.set(name, Member::Value(value.into()));
    }

    /// Sets member `name` to `value` only when it is absent or `null` (a default); true when it
    /// did.
    pub fn insert_if_absent(&mut self, name: &str, value: impl Into<Value>) -> bool {
        match self.position(name) {
            Some(at) if !self.node(&self.members[at].1).is_null() => false,
            _ => {
                self.insert(name, value);
                true
            }
        }
    }

    /// Removes member `name`; true when it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        let LazyObject {
            text,
            members,
            removed,
        } = self;
        let text = text.as_deref().unwrap_or_default();
        let before = members.len();
        let mut input = false;
        members.retain(|(n, member)| {
            let keep = n.bytes(text) != name.as_bytes();
            input |= !keep && matches!(member, Member::Raw(_) | Member::Opened(_));
            keep
        });
        if input && !removed.iter().any(|n| n == name) {
            removed.push(name.to_owned());
        }
        members.len() != before
    }

    /// Makes member `name` what it is in `other` (absent when it is absent there), copying its
    /// text without parsing it: e.g. keeping the old object's `status` on an update.
    pub fn copy_member(&mut self, other: &LazyObject, name: &str) {
        let Some(at) = other.position(name) else {
            self.remove(name);
            return;
        };
        let member = match &other.members[at].1 {
            Member::Raw(span) => Member::Copied(Text {
                source: other.text.clone().expect("raw members lie in a text"),
                span: *span,
            }),
            Member::Copied(text) => Member::Copied(text.clone()),
            Member::Opened(object) | Member::New(object) => Member::New(object.clone()),
            Member::Value(value) => Member::Value(value.clone()),
        };
        self.set(name, member);
    }

    /// The members' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(name, _)| self.name(name))
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the object has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Sets member `name`, in place when present, else after the others.
    fn set(&mut self, name: &str, member: Member) {
        match self.position(name) {
            Some(at) => self.members[at].1 = member,
            None => self.members.push((Name::Own(name.to_owned()), member)),
        }
    }

    /// Where member `name` is (the last one, as a parser keeps the last of duplicates).
    fn position(&self, name: &str) -> Option<usize> {
        let text = self.text_bytes();
        self.members
            .iter()
            .rposition(|(n, _)| n.bytes(text) == name.as_bytes())
    }

    fn text_bytes(&self) -> &[u8] {
        self.text.as_deref().unwrap_or_default()
    }

    fn name<'a>(&'a self, name: &'a Name) -> &'a str {
        match name {
            // The host's text and serde_json's are UTF-8; a name that is not reads as empty.
            Name::Input(_) => std::str::from_utf8(name.bytes(self.text_bytes())).unwrap_or(""),
            Name::Own(name) => name,
        }
    }

    fn node<'a>(&'a self, member: &'a Member) -> Node<'a> {
        match member {
            Member::Raw(span) => Node::Raw(span.of(self.text_bytes())),
            Member::Copied(text) => Node::Raw(text.bytes()),
            Member::Opened(object) | Member::New(object) => Node::Object(object),
            Member::Value(value) => Node::Value(value),
        }
    }
}

impl Name {
    fn bytes<'a>(&'a self, text: &'a [u8]) -> &'a [u8] {
        match self {
            Name::Input(span) => span.of(text),
            Name::Own(name) => name.as_bytes(),
        }
    }
}

impl Member {
    /// Makes this member an object to change (`Opened` or `New`); `None`, leaving it as it is,
    /// when it is neither an object nor `null`. `text` is the text of the object it is in.
    fn open(&mut self, text: Option<&Arc<[u8]>>) -> Option<()> {
        let opened = match self {
            Member::Opened(_) | Member::New(_) => return Some(()),
            Member::Raw(span) => {
                let text = text.expect("raw members lie in a text");
                open_text(text, *span, Member::Opened)?
            }
            Member::Copied(copied) => open_text(&copied.source, copied.span, Member::New)?,
            Member::Value(Value::Null) => Member::New(LazyObject::new()),
            Member::Value(Value::Object(map)) => Member::New(LazyObject {
                members: std::mem::take(map)
                    .into_iter()
                    .map(|(name, value)| (Name::Own(name), Member::Value(value)))
                    .collect(),
                ..LazyObject::default()
            }),
            Member::Value(_) => return None,
        };
        *self = opened;
        Some(())
    }
}

/// The member whose text is `span` of `text` opened: an object as `as_object` keeps it, `null` as
/// a new empty object; `None` for anything else.
fn open_text(text: &Arc<[u8]>, span: Span, as_object: fn(LazyObject) -> Member) -> Option<Member> {
    match span.of(text).first() {
        Some(b'{') => Some(as_object(LazyObject::within(text.clone(), span).ok()?)),
        Some(b'n') => Some(Member::New(LazyObject::new())),
        _ => None,
    }
}

/// A borrowed view of a value on a read's path.
#[derive(Clone, Copy)]
enum Node<'a> {
    Raw(&'a [u8]),
    Object(&'a LazyObject),
    Value(&'a Value),
}

impl<'a> Node<'a> {
    fn is_null(self) -> bool {
        match self {
            Node::Raw(raw) => raw.trim_ascii() == b"null",
            Node::Object(_) => false,
            Node::Value(value) => value.is_null(),
        }
    }

    /// Member `name` of this value: `None` when this is `null` or lacks it, an error (the type
    /// met) when this is not an object.
    fn child(self, name: &str) -> Result<Option<Node<'a>>, String> {
        match self {
            Node::Object(object) => Ok(object
                .position(name)
                .map(|at| object.node(&object.members[at].1))),
            Node::Value(Value::Object(map)) => Ok(map.get(name).map(Node::Value)),
            Node::Value(Value::Null) => Ok(None),
            Node::Value(other) => Err(format!("expected an object, found {}", kind(other))),
            Node::Raw(raw) => match raw.first() {
                Some(b'{') => {
                    let found = scan::find(raw, name).map_err(|e| e.to_string())?;
                    Ok(found.map(|value| Node::Raw(&raw[value])))
                }
                Some(b'n') => Ok(None),
                _ => {
                    let value: Value = serde_json::from_slice(raw).map_err(|e| e.to_string())?;
                    Err(format!("expected an object, found {}", kind(&value)))
                }
            },
        }
    }

    fn decode<T: DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        match self {
            Node::Raw(raw) => serde_json::from_slice(raw),
            Node::Value(value) => T::deserialize(value),
            Node::Object(object) => serde_json::from_slice(&object.to_json()),
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

mod encoding;
mod patch;
mod scan;
#[cfg(test)]
mod tests;
