//! Testing a module's version conversion natively: [`round_trip`] converts an object to another
//! version and back through [`Strategy::convert`], as the host does before it swaps in a new
//! version of a converting module, and says where the two differ.

use serde_json::Value;

use crate::context::Context;
use crate::strategy::Strategy;

/// Converts `obj` to `via` and back to its own `apiVersion` with `strategy`, and checks each
/// answer names the version asked for and the round trip gives `obj` back unchanged.
///
/// # Errors
/// Which conversion failed or returned the wrong version, or the first field where the object
/// came back different.
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use strategy_guest_sdk::{conversion, Context, Resource, Scope, Strategy};
///
/// // Drops `spec.extra` on the way: not a lossless conversion.
/// struct Lossy;
/// impl Strategy for Lossy {
///     type Object = Value;
///     const NAME: &'static str = "lossy";
///     const RESOURCES: &'static [Resource] = &[Resource::new("g.io", "v2", "K", "ks", Scope::Cluster)];
///     fn convert(&self, _: &Context, mut obj: Value, desired: &str) -> Result<Value, String> {
///         obj["spec"].as_object_mut().map(|s| s.remove("extra"));
///         obj["apiVersion"] = desired.into();
///         Ok(obj)
///     }
/// }
///
/// let obj = json!({"apiVersion": "g.io/v1", "kind": "K", "spec": {"a": 1, "extra": true}});
/// let err = conversion::round_trip(&Lossy, &obj, "g.io/v2").unwrap_err();
/// assert_eq!(err, "g.io/v1 → g.io/v2 → g.io/v1 changed spec.extra: true became absent");
/// ```
pub fn round_trip<S: Strategy>(strategy: &S, obj: &Value, via: &str) -> Result<(), String> {
    let ctx = Context::default();
    let from = obj["apiVersion"].as_str().unwrap_or_default().to_string();
    let step = |obj: Value, to: &str| -> Result<Value, String> {
        let converted = convert(strategy, &ctx, obj, to)
            .map_err(|e| format!("converting to {to} failed: {e}"))?;
        match converted["apiVersion"].as_str() {
            Some(v) if v == to => Ok(converted),
            other => Err(format!("converting to {to} answered apiVersion {other:?}")),
        }
    };
    let back = step(step(obj.clone(), via)?, &from)?;
    match first_difference(obj, &back, "") {
        None => Ok(()),
        Some((path, before, after)) => Err(format!(
            "{from} → {via} → {from} changed {path}: {before} became {after}"
        )),
    }
}

/// `obj` converted to `desired` the way the module converts: through
/// [`Strategy::convert_lazily`] when [`Strategy::CONVERTS_LAZILY`], else [`Strategy::convert`].
///
/// # Errors
/// The conversion's own error, or an answer that is not a JSON object.
pub fn convert<S: Strategy>(
    strategy: &S,
    ctx: &Context,
    obj: Value,
    desired: &str,
) -> Result<Value, String> {
    if !S::CONVERTS_LAZILY {
        return strategy.convert(ctx, obj, desired);
    }
    let lazy = serde_json::to_vec(&obj)
        .and_then(|json| serde_json::from_slice(&json))
        .map_err(|e| format!("the object is not a JSON object: {e}"))?;
    let converted = strategy.convert_lazily(ctx, lazy, desired)?;
    serde_json::to_value(&converted).map_err(|e| e.to_string())
}

/// The first path where `a` and `b` differ, with both values (`absent` for a missing one).
pub(crate) fn first_difference(
    a: &Value,
    b: &Value,
    path: &str,
) -> Option<(String, String, String)> {
    let shown = |v: Option<&Value>| v.map_or_else(|| "absent".to_string(), Value::to_string);
    let join = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, &join(k)),
                (p, q) => Some((join(k), shown(p), shown(q))),
            })
        }
        _ if a == b => None,
        _ => Some((path.to_string(), a.to_string(), b.to_string())),
    }
}
