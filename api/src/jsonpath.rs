//! The JSONPath subset of CRD printer columns, evaluated as Kubernetes' `client-go/util/jsonpath`
//! does: every match, in order (`.a.b`, `['a.b']`, `[0]`, `[-1]`, `[*]`, `.*`,
//! `[?(@.type=="Ready")]`); a missing key is no match, not an error.

use serde_json::Value;

/// Every value `path` selects in `obj`, in document order (`{...}` and a leading `$` allowed).
/// An expression outside the subset selects nothing.
pub(crate) fn find<'a>(obj: &'a Value, path: &str) -> Vec<&'a Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path)
        .trim();
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    let mut current = vec![obj];
    while !rest.is_empty() && !current.is_empty() {
        let Some((step, after)) = next_step(rest) else {
            return Vec::new();
        };
        current = current.into_iter().flat_map(|v| step.apply(v)).collect();
        rest = after;
    }
    current
}

/// One step of a path.
#[derive(Debug, PartialEq)]
enum Step<'p> {
    /// A field of an object.
    Field(&'p str),
    /// An array element; negative counts from the end.
    Index(i64),
    /// Every element of an array or value of an object.
    Wildcard,
    /// The array elements whose `field` compares to `value`.
    Filter {
        field: &'p str,
        equal: bool,
        value: &'p str,
    },
}

impl Step<'_> {
    fn apply<'a>(&self, v: &'a Value) -> Vec<&'a Value> {
        match self {
            Step::Field(name) => v.get(*name).into_iter().collect(),
            Step::Index(i) => {
                let Some(items) = v.as_array() else {
                    return Vec::new();
                };
                let len = items.len() as i64;
                let at = if *i < 0 { len + i } else { *i };
                usize::try_from(at)
                    .ok()
                    .and_then(|at| items.get(at))
                    .into_iter()
                    .collect()
            }
            Step::Wildcard => match v {
                Value::Array(items) => items.iter().collect(),
                Value::Object(map) => map.values().collect(),
                _ => Vec::new(),
            },
            Step::Filter {
                field,
                equal,
                value,
            } => v
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter(|item| {
                            // An element without the field is skipped, as with AllowMissingKeys.
                            let Some(left) = find(item, &format!(".{field}")).first().copied()
                            else {
                                return false;
                            };
                            literal_equals(left, value) == *equal
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// Compares a value to a filter literal (`"x"`, `'x'`, `3`, `true`).
fn literal_equals(left: &Value, literal: &str) -> bool {
    let literal = literal.trim();
    let quoted = ['"', '\'']
        .iter()
        .find_map(|q| literal.strip_prefix(*q).and_then(|l| l.strip_suffix(*q)));
    match (left, quoted) {
        (Value::String(s), Some(q)) => s == q,
        (_, Some(_)) => false,
        (Value::Number(n), None) => {
            matches!((n.as_f64(), literal.parse::<f64>()), (Some(a), Ok(b)) if a == b)
        }
        (Value::Bool(b), None) => literal.parse::<bool>() == Ok(*b),
        _ => false,
    }
}

/// Splits the next step off `rest`; `None` for syntax outside the subset.
fn next_step(rest: &str) -> Option<(Step<'_>, &str)> {
    if let Some(r) = rest.strip_prefix('.') {
        if r.starts_with('.') {
            // Recursive descent (`..`) is not part of the subset.
            return None;
        }
        let end = r.find(['.', '[']).unwrap_or(r.len());
        let name = &r[..end];
        let step = match name {
            "" => return None,
            "*" => Step::Wildcard,
            name => Step::Field(name),
        };
        return Some((step, &r[end..]));
    }
    let r = rest.strip_prefix('[')?;
    let (inner, after) = bracket(r)?;
    let inner = inner.trim();
    let step = if inner == "*" {
        Step::Wildcard
    } else if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        let filter = filter.trim().strip_prefix("@.")?;
        let (field, equal, value) = if let Some((f, v)) = filter.split_once("==") {
            (f, true, v)
        } else {
            let (f, v) = filter.split_once("!=")?;
            (f, false, v)
        };
        Step::Filter {
            field: field.trim(),
            equal,
            value,
        }
    } else if let Some(q) = ['"', '\'']
        .iter()
        .find_map(|q| inner.strip_prefix(*q).and_then(|i| i.strip_suffix(*q)))
    {
        Step::Field(q)
    } else {
        Step::Index(inner.parse().ok()?)
    };
    Some((step, after))
}

/// The text up to the `]` closing a bracket (quotes may hold `]`), and what follows it.
fn bracket(r: &str) -> Option<(&str, &str)> {
    let mut quote = None;
    for (i, c) in r.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ']') => return Some((&r[..i], &r[i + 1..])),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selects_every_match_in_order() {
        let o = json!({
            "metadata": {"labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"a": [1, {"b": 2}], "refs": [{"name": "x"}, {"name": "y"}, {"other": 1}]},
            "status": {"conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "Active", "status": "False"},
                {"type": "Ready", "status": "Unknown"}
            ]}
        });
        assert_eq!(find(&o, ".spec.a[1].b"), vec![&json!(2)]);
        assert_eq!(find(&o, "{.spec.a[-1].b}"), vec![&json!(2)]);
        assert_eq!(
            find(&o, "$.spec.refs[*].name"),
            vec![&json!("x"), &json!("y")]
        );
        assert_eq!(
            find(&o, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![&json!("True"), &json!("Unknown")]
        );
        assert_eq!(
            find(&o, ".status.conditions[?(@.type != 'Ready')].status"),
            vec![&json!("False")]
        );
        assert_eq!(
            find(&o, ".metadata.labels['app.kubernetes.io/name']"),
            vec![&json!("web")]
        );
        assert_eq!(find(&o, ".spec.*").len(), 2);
        assert!(find(&o, ".nope.deeper").is_empty());
        assert!(find(&o, ".spec.a[7]").is_empty());
        assert!(find(&o, ".spec..name").is_empty());
        assert!(find(&o, ".spec.a[x]").is_empty());
    }
}
