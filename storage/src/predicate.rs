//! Selection predicates: label and field selectors parsed from Kubernetes' query syntax and
//! matched against JSON objects.
//!
//! Label selectors take `=`, `==`, `!=`, `in (...)`, `notin (...)`, `key` (exists) and `!key`
//! (does not exist), joined by commas. Field selectors take `=`, `==` and `!=` on the fields a
//! resource supports (`metadata.name` and `metadata.namespace` for every resource).

use std::fmt;

use serde_json::Value;

use super::error::{Result, StorageError};
use super::object::SharedObject;

/// The fields every resource can be selected by.
pub const DEFAULT_SELECTABLE_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelRequirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    /// A `matchExpressions` operator Kubernetes does not know: selects nothing.
    Unsatisfiable(String),
}

impl LabelRequirement {
    fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self {
            Self::Unsatisfiable(_) => false,
            Self::Equals(k, v) => get(k) == Some(v.as_str()),
            Self::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Self::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Self::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Self::Exists(k) => get(k).is_some(),
            Self::DoesNotExist(k) => get(k).is_none(),
        }
    }
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
    source: String,
}

impl LabelSelector {
    /// Parses Kubernetes' label selector syntax.
    ///
    /// # Errors
    /// `BadRequest` naming the offending part.
    ///
    /// # Examples
    /// ```
    /// use strategy_host_storage::predicate::LabelSelector;
    /// let sel = LabelSelector::parse("app=web,tier in (a, b),!legacy").unwrap();
    /// assert!(sel.matches(&serde_json::json!({"metadata": {"labels": {"app": "web", "tier": "b"}}})));
    /// ```
    pub fn parse(text: &str) -> Result<Self> {
        let mut requirements = Vec::new();
        for part in split_top_level(text)? {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_label_requirement(part)?);
        }
        Ok(Self {
            requirements,
            source: text.trim().to_string(),
        })
    }

    /// The `metav1.LabelSelector` `selector` (`matchLabels`, `matchExpressions`), as the query
    /// syntax would say it; `{}` (or no selector) selects everything.
    ///
    /// # Examples
    /// ```
    /// use strategy_host_storage::predicate::LabelSelector;
    /// let sel = LabelSelector::from_label_selector(&serde_json::json!({"matchLabels": {"app": "web"},
    ///     "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}));
    /// assert_eq!(sel.to_string(), "app=web,tier notin (db)");
    /// ```
    pub fn from_label_selector(selector: &Value) -> Self {
        let mut requirements = Vec::new();
        let match_labels = selector.get("matchLabels").and_then(Value::as_object);
        for (k, v) in match_labels.into_iter().flatten() {
            let v = v.as_str().map(String::from);
            requirements.push(match v {
                Some(v) => LabelRequirement::Equals(k.clone(), v),
                None => LabelRequirement::Unsatisfiable(k.clone()),
            });
        }
        let expressions = selector.get("matchExpressions").and_then(Value::as_array);
        for e in expressions.into_iter().flatten() {
            let key = e
                .get("key")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let values: Vec<String> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            requirements.push(
                match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                    "In" => LabelRequirement::In(key, values),
                    "NotIn" => LabelRequirement::NotIn(key, values),
                    "Exists" => LabelRequirement::Exists(key),
                    "DoesNotExist" => LabelRequirement::DoesNotExist(key),
                    _ => LabelRequirement::Unsatisfiable(key),
                },
            );
        }
        let source = requirements
            .iter()
            .map(|r| match r {
                LabelRequirement::Equals(k, v) => format!("{k}={v}"),
                LabelRequirement::NotEquals(k, v) => format!("{k}!={v}"),
                LabelRequirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
                LabelRequirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
                LabelRequirement::Exists(k) => k.clone(),
                LabelRequirement::DoesNotExist(k) => format!("!{k}"),
                LabelRequirement::Unsatisfiable(k) => format!("{k} (unsatisfiable)"),
            })
            .collect::<Vec<_>>()
            .join(",");
        Self {
            requirements,
            source,
        }
    }

    /// True when `labels` satisfy every requirement.
    pub fn matches_labels(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches(|k| labels.get(k).map(String::as_str)))
    }

    /// True when the selector has no requirements.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// True when `obj`'s `metadata.labels` satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| r.matches(get))
    }

    /// True when a shared object's labels satisfy every requirement (read from its head,
    /// without parsing the object).
    pub fn matches_object(&self, obj: &SharedObject) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches(|k| obj.label(k)))
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(bad_selector(text, "unbalanced ')'"));
                }
            }
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(bad_selector(text, "unbalanced '('"));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn bad_selector(text: &str, why: &str) -> StorageError {
    StorageError::BadRequest(format!("unable to parse requirement {text:?}: {why}"))
}

fn parse_label_requirement(part: &str) -> Result<LabelRequirement> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(LabelRequirement::DoesNotExist(label_key(key.trim(), part)?));
    }
    if let Some((k, v)) = part.split_once("!=") {
        return Ok(LabelRequirement::NotEquals(
            label_key(k, part)?,
            label_value(v, part)?,
        ));
    }
    if let Some((k, v)) = part.split_once("==") {
        return Ok(LabelRequirement::Equals(
            label_key(k, part)?,
            label_value(v, part)?,
        ));
    }
    if let Some((k, v)) = part.split_once('=') {
        return Ok(LabelRequirement::Equals(
            label_key(k, part)?,
            label_value(v, part)?,
        ));
    }
    let mut words = part.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default().trim();
    if rest.is_empty() {
        return Ok(LabelRequirement::Exists(label_key(key, part)?));
    }
    let (op, list) = rest
        .split_once(char::is_whitespace)
        .map(|(op, list)| (op, list.trim()))
        .or_else(|| rest.find('(').map(|i| (rest[..i].trim(), &rest[i..])))
        .ok_or_else(|| bad_selector(part, "expected 'in' or 'notin' and a list"))?;
    let values = parse_value_list(list, part)?;
    let key = label_key(key, part)?;
    match op {
        "in" => Ok(LabelRequirement::In(key, values)),
        "notin" => Ok(LabelRequirement::NotIn(key, values)),
        _ => Err(bad_selector(part, "expected 'in' or 'notin'")),
    }
}

fn parse_value_list(list: &str, part: &str) -> Result<Vec<String>> {
    let inner = list
        .strip_prefix('(')
        .and_then(|l| l.strip_suffix(')'))
        .ok_or_else(|| bad_selector(part, "values must be in parentheses"))?;
    inner.split(',').map(|v| label_value(v, part)).collect()
}

fn label_key(key: &str, part: &str) -> Result<String> {
    let key = key.trim();
    let valid = !key.is_empty()
        && key.len() <= 316
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if valid {
        Ok(key.to_string())
    } else {
        Err(bad_selector(part, "invalid label key"))
    }
}

fn label_value(value: &str, part: &str) -> Result<String> {
    let value = value.trim();
    let valid = value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(value.to_string())
    } else {
        Err(bad_selector(part, "invalid label value"))
    }
}

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
    /// `BadRequest` for bad syntax or a field the resource does not support.
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
                return Err(StorageError::BadRequest(format!(
                    "invalid field selector {part:?}: expected field=value"
                )));
            };
            let field = field.trim();
            if !selectable.contains(&field) {
                return Err(StorageError::BadRequest(format!(
                    "field label not supported: {field}"
                )));
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

    /// True when every requirement holds on a shared object: `metadata.name` and
    /// `metadata.namespace` come from its head; any other field parses the object once.
    pub fn matches_object(&self, obj: &SharedObject) -> bool {
        let mut parsed: Option<Value> = None;
        self.requirements.iter().all(|r| {
            let actual = match r.field.as_str() {
                "metadata.name" => obj.name().unwrap_or_default().to_string(),
                "metadata.namespace" => obj.namespace().unwrap_or_default().to_string(),
                field => field_text(parsed.get_or_insert_with(|| obj.to_value()), field),
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

/// Which objects a list or watch wants: both selectors must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SelectionPredicate {
    /// The label selector.
    pub label: LabelSelector,
    /// The field selector.
    pub field: FieldSelector,
}

impl SelectionPredicate {
    /// True when the predicate selects every object.
    pub fn is_everything(&self) -> bool {
        self.label.is_empty() && self.field.is_empty()
    }

    /// True when `obj` is selected.
    pub fn matches(&self, obj: &Value) -> bool {
        self.label.matches(obj) && self.field.matches(obj)
    }

    /// True when a shared object is selected (see [`FieldSelector::matches_object`]).
    pub fn matches_object(&self, obj: &SharedObject) -> bool {
        self.is_everything() || (self.label.matches_object(obj) && self.field.matches_object(obj))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn label_operators() {
        let o = obj(json!({"app": "web", "tier": "front"}));
        let yes = [
            "",
            "app=web",
            "app==web",
            "app!=db",
            "tier in (front,back)",
            "tier notin (back)",
            "app",
            "!legacy",
            "app=web, tier in ( front )",
            "missing notin (x)",
        ];
        for s in yes {
            assert!(
                LabelSelector::parse(s).unwrap().matches(&o),
                "{s} should match"
            );
        }
        let no = [
            "app=db",
            "app!=web",
            "tier in (back)",
            "legacy",
            "!app",
            "tier notin (front)",
        ];
        for s in no {
            assert!(
                !LabelSelector::parse(s).unwrap().matches(&o),
                "{s} should not match"
            );
        }
    }

    #[test]
    fn malformed_label_selectors_are_bad_requests() {
        for s in [
            "app in web",
            "tier in (a",
            "a=b)",
            "x y z",
            "=v",
            "a=b c",
            "k in",
        ] {
            let err = LabelSelector::parse(s).unwrap_err();
            assert!(err.is_bad_request(), "{s}: {err}");
        }
    }

    #[test]
    fn exact_matches_are_read_whatever_else_the_selector_names() {
        let name = |s| FieldSelector::exact_match(s, "metadata.name");
        assert_eq!(name("metadata.name=a").as_deref(), Some("a"));
        assert_eq!(name("spec.x=1, metadata.name==b").as_deref(), Some("b"));
        assert_eq!(name("metadata.name!=a"), None);
        assert_eq!(name("metadata.namespace=a"), None);
        assert_eq!(name("metadata.name"), None, "not a selector");
        assert_eq!(name(""), None);
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        let f = |s| FieldSelector::parse(s, DEFAULT_SELECTABLE_FIELDS).unwrap();
        assert!(f("metadata.name=a").matches(&o));
        assert!(f("metadata.name==a,metadata.namespace=ns").matches(&o));
        assert!(!f("metadata.name!=a").matches(&o));
        assert!(FieldSelector::parse("spec.x=1", DEFAULT_SELECTABLE_FIELDS)
            .unwrap_err()
            .is_bad_request());
        assert!(FieldSelector::name_equals("a").matches(&o));
    }

    #[test]
    fn shared_objects_are_selected_as_their_trees_are() {
        let objects = [
            json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web", "tier": "b"}}, "spec": {"x": 1}}),
            json!({"metadata": {"name": "b", "labels": {"app": "db"}}, "spec": {"x": "1"}}),
            json!({"metadata": {"name": "c", "namespace": "other"}}),
        ];
        let selectable = ["metadata.name", "metadata.namespace", "spec.x"];
        let selectors = [
            ("", ""),
            ("app=web", ""),
            ("app in (web, db),!legacy", "metadata.namespace!=other"),
            ("tier notin (a)", "metadata.name=b"),
            ("", "spec.x=1"),
            ("", "metadata.namespace="),
        ];
        for (label, field) in selectors {
            let predicate = SelectionPredicate {
                label: LabelSelector::parse(label).unwrap(),
                field: FieldSelector::parse(field, &selectable).unwrap(),
            };
            for o in &objects {
                let shared = SharedObject::new(o.clone());
                assert_eq!(
                    predicate.matches_object(&shared),
                    predicate.matches(o),
                    "{label:?} {field:?} on {o}"
                );
            }
        }
    }
}
