//! Field selectors: `=`, `==` and `!=` on the fields a resource supports (`metadata.name` and
//! `metadata.namespace` for every resource), matched against an object's fields.

use std::fmt;

use serde_json::Value;

use crate::SelectorError;

type Result<T> = std::result::Result<T, SelectorError>;

/// The fields every resource can be selected by.
pub const DEFAULT_SELECTABLE_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];

/// One field requirement: `path = value` or `path != value`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldRequirement {
    field: String,
    value: String,
    negated: bool,
}

/// A parsed field selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
    source: String,
}

impl FieldSelector {
    /// Parses `field=value,field!=value`, accepting only the fields in `selectable`.
    ///
    /// # Errors
    /// A [`SelectorError`] for bad syntax or a field the resource does not support.
    pub fn parse(text: &str, selectable: &[&str]) -> Result<Self> {
        let mut requirements = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, value, negated) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, v, false)
            } else {
                return Err(SelectorError(format!(
                    "invalid field selector {part:?}: expected field=value"
                )));
            };
            let field = field.trim();
            if !selectable.contains(&field) {
                return Err(SelectorError(format!("field label not supported: {field}")));
            }
            requirements.push(FieldRequirement {
                field: field.to_string(),
                value: value.trim().to_string(),
                negated,
            });
        }
        Ok(Self {
            requirements,
            source: text.trim().to_string(),
        })
    }

    /// The value a selector's text requires `field` to equal (`field=value` or
    /// `field==value` among its requirements), whatever other fields it names: Kubernetes'
    /// `RequiresExactMatch`. `None` when it requires none, or the text does not parse.
    pub fn exact_match(text: &str, field: &str) -> Option<String> {
        let fields: Vec<&str> = text
            .split(',')
            .filter_map(|part| part.split(['=', '!']).next())
            .map(str::trim)
            .collect();
        let selector = Self::parse(text, &fields).ok()?;
        selector
            .requirements
            .into_iter()
            .find(|r| r.field == field && !r.negated)
            .map(|r| r.value)
    }

    /// A selector for exactly one name (what a single-object watch uses).
    pub fn name_equals(name: &str) -> Self {
        Self {
            requirements: vec![FieldRequirement {
                field: "metadata.name".into(),
                value: name.into(),
                negated: false,
            }],
            source: format!("metadata.name={name}"),
        }
    }

    /// True when the selector has no requirements.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The selector with the fields `rename` maps renamed (a resource served over another's
    /// stored objects selects by the stored field names).
    pub fn renamed(mut self, rename: impl Fn(&str) -> Option<String>) -> Self {
        for r in &mut self.requirements {
            if let Some(field) = rename(&r.field) {
                r.field = field;
            }
        }
        self
    }

    /// True when every requirement holds on `obj` (a missing field reads as `""`).
    pub fn matches(&self, obj: &Value) -> bool {
        self.requirements
            .iter()
            .all(|r| r.holds(&field_text(obj, &r.field)))
    }

    /// True when every requirement holds on an object whose name and namespace are known
    /// apart from its fields (a stored object's head): any other field reads `object()`, at
    /// most once.
    pub fn matches_with(
        &self,
        name: &str,
        namespace: &str,
        object: impl FnOnce() -> Value,
    ) -> bool {
        let mut object = Some(object);
        let mut parsed: Option<Value> = None;
        self.requirements.iter().all(|r| {
            let actual = match r.field.as_str() {
                "metadata.name" => name.to_string(),
                "metadata.namespace" => namespace.to_string(),
                field => {
                    let obj = parsed
                        .get_or_insert_with(|| object.take().map(|f| f()).unwrap_or_default());
                    field_text(obj, field)
                }
            };
            r.holds(&actual)
        })
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl FieldRequirement {
    fn holds(&self, actual: &str) -> bool {
        (actual == self.value) != self.negated
    }
}

/// The text of a dotted field path (`""` when missing; non-strings as JSON).
fn field_text(obj: &Value, field: &str) -> String {
    field
        .split('.')
        .try_fold(obj, |v, seg| v.get(seg))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}
