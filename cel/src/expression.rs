//! CEL expressions as admission (policy validations, match conditions) and authorization (webhook
//! match conditions) use them: compiled once, evaluated over the variables the caller binds
//! (`object`, `oldObject`, `request`, `params`, `namespaceObject` in admission) with
//! Kubernetes' CEL libraries (`kube-cel` on the `cel` crate). Objects become CEL maps with
//! their keys as they are — annotations and labels are read as `m['example.com/x']`, as
//! Kubernetes reads map-typed fields. Typed object literals (`Object{spec: Object.spec{...}}`,
//! `JSONPatch{op: "add", ...}`), which the interpreter cannot evaluate, are read as maps keyed by
//! their field names — what they are as JSON.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, IdedExpr, Program, Value as CelValue};
use kube_cel::KubeCelExt as _;
use serde_json::Value;

/// What went wrong with an expression; its text is what Kubernetes reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// It does not compile.
    #[error("compilation failed: {0}")]
    Compile(String),
    /// Its evaluation failed.
    #[error("{what} {expression:?} resulted in error: {message}")]
    Evaluate {
        /// `expression`, `messageExpression`, `variable`.
        what: &'static str,
        /// The expression's text.
        expression: String,
        /// The interpreter's error.
        message: String,
    },
    /// The spec gives no expression where one is required.
    #[error("{0} is required")]
    Missing(&'static str),
    /// It gave a value of another type than the one asked for (`a non-boolean: ...`).
    #[error("{what} {expression:?} returned {found}")]
    Type {
        /// `expression`, `messageExpression`.
        what: &'static str,
        /// The expression's text.
        expression: String,
        /// What it returned instead, as Kubernetes words it.
        found: String,
    },
}

/// The result of compiling or evaluating an expression.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A compiled expression.
#[derive(Debug)]
pub struct Expression {
    /// The parsed expression, its struct literals made maps.
    ast: IdedExpr,
    /// Its text.
    pub source: String,
}

impl Expression {
    /// Compiles `source`.
    ///
    /// # Errors
    /// The parse errors.
    pub fn compile(source: &str) -> Result<Self> {
        let program = Program::compile(source).map_err(|e| Error::Compile(e.to_string()))?;
        let mut ast = program.expression().clone();
        super::typed_literals_as_maps(&mut ast, &mut Vec::new());
        Ok(Self {
            ast,
            source: source.to_string(),
        })
    }
}

/// A JSON value as a CEL value.
pub fn to_cel(value: &Value) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => CelValue::Int(i),
            (None, Some(u)) => CelValue::UInt(u),
            _ => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(fields) => {
            let map: HashMap<Key, CelValue> = fields
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            CelValue::Map(Map { map: Arc::new(map) })
        }
    }
}

/// A CEL value as JSON (map keys as strings); `Err` names what JSON cannot hold.
fn from_cel(value: &CelValue) -> std::result::Result<Value, String> {
    Ok(match value {
        CelValue::Null => Value::Null,
        CelValue::Bool(b) => Value::Bool(*b),
        CelValue::Int(i) => Value::from(*i),
        CelValue::UInt(u) => Value::from(*u),
        CelValue::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or("a non-finite number")?,
        CelValue::String(s) => Value::String((**s).clone()),
        CelValue::List(items) => {
            Value::Array(items.iter().map(from_cel).collect::<Result<_, _>>()?)
        }
        CelValue::Map(m) => Value::Object(
            m.map
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Key::String(s) => (**s).clone(),
                        Key::Int(i) => i.to_string(),
                        Key::Uint(u) => u.to_string(),
                        Key::Bool(b) => b.to_string(),
                    };
                    Ok((key, from_cel(v)?))
                })
                .collect::<std::result::Result<_, String>>()?,
        ),
        other => return Err(format!("{other:?}")),
    })
}

/// The variables one evaluation sees.
pub struct Activation {
    context: Context<'static>,
}

impl Activation {
    /// An activation binding each `(name, value)`.
    pub fn new(variables: &[(&str, &Value)]) -> Self {
        let mut context = Context::default().with_all();
        for (name, value) in variables {
            context.add_variable_from_value(*name, to_cel(value));
        }
        Self { context }
    }

    /// Binds `variables` (a policy's `spec.variables`, in order, each seeing those before it) as
    /// `variables.<name>`. A variable that does not compile or evaluate is left out, so only an
    /// expression that uses it fails, as Kubernetes evaluates variables lazily.
    pub fn bind_variables(&mut self, variables: &[(String, Result<Expression>)]) {
        if variables.is_empty() {
            return;
        }
        let mut bound: HashMap<Key, CelValue> = HashMap::new();
        for (name, expression) in variables {
            let Ok(expression) = expression else {
                continue;
            };
            if let Ok(value) = self.evaluate(expression, "variable") {
                bound.insert(Key::String(Arc::new(name.clone())), value);
                let map = CelValue::Map(Map {
                    map: Arc::new(bound.clone()),
                });
                self.context.add_variable_from_value("variables", map);
            }
        }
    }

    /// Evaluates `expression` to a boolean.
    ///
    /// # Errors
    /// An evaluation error, or a result that is not a boolean.
    pub fn truth(&self, expression: &Expression) -> Result<bool> {
        match self.evaluate(expression, "expression")? {
            CelValue::Bool(b) => Ok(b),
            other => Err(Error::Type {
                what: "expression",
                expression: expression.source.clone(),
                found: format!("a non-boolean: {other:?}"),
            }),
        }
    }

    /// Evaluates a `messageExpression` to a string.
    ///
    /// # Errors
    /// An evaluation error, or a result that is not a string.
    pub fn text(&self, expression: &Expression) -> Result<String> {
        match self.evaluate(expression, "messageExpression")? {
            CelValue::String(s) => Ok((*s).clone()),
            other => Err(Error::Type {
                what: "messageExpression",
                expression: expression.source.clone(),
                found: format!("a non-string: {other:?}"),
            }),
        }
    }

    /// Evaluates `expression` (a mutation's) to JSON.
    ///
    /// # Errors
    /// An evaluation error, or a result JSON cannot hold (a function, a type).
    pub fn json(&self, expression: &Expression) -> Result<Value> {
        from_cel(&self.evaluate(expression, "expression")?).map_err(|found| Error::Type {
            what: "expression",
            expression: expression.source.clone(),
            found: format!("{found}, which is not JSON"),
        })
    }

    fn evaluate(&self, expression: &Expression, what: &'static str) -> Result<CelValue> {
        CelValue::resolve(&expression.ast, &self.context).map_err(|e| Error::Evaluate {
            what,
            expression: expression.source.clone(),
            message: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_are_read_by_their_own_keys() {
        let object = json!({"metadata": {"annotations": {"gateway.networking.k8s.io/channel": "standard"}}, "spec": {"group": "g"}});
        let a = Activation::new(&[("object", &object)]);
        let holds = |e: &str| a.truth(&Expression::compile(e).unwrap());
        assert_eq!(
            holds(
                "object.metadata.annotations.exists(k, k == 'gateway.networking.k8s.io/channel')"
            ),
            Ok(true)
        );
        assert_eq!(
            holds("object.metadata.annotations['gateway.networking.k8s.io/channel'] == 'standard'"),
            Ok(true)
        );
        assert_eq!(holds("matches('v1.2.3', 'v1.[0-3].\\\\d+')"), Ok(true));
        assert!(holds("object.nope.x == 1").is_err());
        assert!(holds("'a'").is_err());
        assert!(Expression::compile("object.(").is_err());
    }

    #[test]
    fn typed_object_literals_are_maps() {
        let object = json!({"spec": {"replicas": 3}});
        let a = Activation::new(&[("object", &object)]);
        let e = |source: &str| Expression::compile(source).unwrap();
        assert_eq!(
            a.truth(&e(
                "Object{spec: Object.spec{replicas: object.spec.replicas + 1}}.spec.replicas == 4"
            )),
            Ok(true)
        );
        assert_eq!(
            a.truth(&e(
                "[JSONPatch{op: 'add', path: '/spec/x', value: 1}][0].op == 'add'"
            )),
            Ok(true)
        );
        assert_eq!(
            a.truth(&e("object.spec.all(k, Object{a: k}.a == 'replicas')")),
            Ok(true)
        );
    }

    #[test]
    fn variables_see_the_ones_before_them_and_a_broken_one_fails_only_where_used() {
        let object = json!({"spec": {"replicas": 3}});
        let mut a = Activation::new(&[("object", &object)]);
        let variable = |name: &str, e: &str| (name.to_string(), Expression::compile(e));
        a.bind_variables(&[
            variable("replicas", "object.spec.replicas"),
            variable("doubled", "variables.replicas * 2"),
            variable("broken", "object.spec.nope"),
        ]);
        let holds = |e: &str| a.truth(&Expression::compile(e).unwrap());
        assert_eq!(holds("variables.doubled == 6"), Ok(true));
        assert!(holds("variables.broken == 1").is_err());
        assert_eq!(holds("variables.replicas < 5"), Ok(true));
    }
}
