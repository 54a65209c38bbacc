//! Label selectors: Kubernetes' query syntax (`=`, `==`, `!=`, `in (...)`, `notin (...)`,
//! `key`, `!key`, joined by commas) or a `metav1.LabelSelector`, matched against an object's
//! labels (a tree's, a shared object's head, or a label map).

use std::fmt;

use serde_json::Value;

use crate::SelectorError;

type Result<T> = std::result::Result<T, SelectorError>;

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
    /// A [`SelectorError`] naming the offending part.
    ///
    /// # Examples
    /// ```
    /// use strategy_host_apimachinery::LabelSelector;
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
    /// use strategy_host_apimachinery::LabelSelector;
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

    /// True when the labels `label` reads (a label's value by its key) satisfy every
    /// requirement: how a store matches an object without parsing all of it.
    pub fn matches_with<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(&label))
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

fn bad_selector(text: &str, why: &str) -> SelectorError {
    SelectorError(format!("unable to parse requirement {text:?}: {why}"))
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
