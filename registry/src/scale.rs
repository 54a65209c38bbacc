//! The `scale` subresource of custom resources: an `autoscaling/v1` `Scale` read from the
//! paths a CRD version declares, and written back through the resource's own update pipeline
//! (admission, schema, strategy), so `kubectl scale` and autoscalers change only the replicas.

use std::sync::Arc;

use serde_json::{json, Value};

use super::definition::ScaleSubresource;
use super::error::{Error, Result};
use super::store::{Outcome, RegistryStore, RequestScope};
use super::update::UpdateFn;
use crate::strategy::{FieldError, FieldErrorKind};
use crate::system_fields::meta_str;
use strategy_host_storage::GetOptions;

/// A change of a `Scale`: the current one in, the desired one out.
pub type ScaleFn = Arc<dyn Fn(&Value) -> Result<Value> + Send + Sync>;

/// The value at a dotted path.
fn at<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(obj, |v, part| v.get(part))
}

/// Sets the value at a dotted path, making the objects on the way.
fn set_at(obj: &mut Value, path: &str, value: Value) {
    let mut cur = obj;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !cur.is_object() {
            *cur = json!({});
        }
        let map = cur.as_object_mut().expect("made an object above");
        if parts.peek().is_none() {
            map.insert(part.to_string(), value);
            return;
        }
        cur = map.entry(part).or_insert_with(|| json!({}));
    }
}

/// The `Scale` of `obj` as `paths` declare it: replicas 0 where a path is absent, and the
/// selector as the string the object holds there (Kubernetes' custom resource scale).
pub fn scale_of(obj: &Value, paths: &ScaleSubresource) -> Value {
    let replicas = |path: &str| at(obj, path).and_then(Value::as_i64).unwrap_or(0);
    let meta = &obj["metadata"];
    let mut metadata = json!({});
    for key in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(key) {
            metadata[key] = v.clone();
        }
    }
    let mut status = json!({"replicas": replicas(&paths.status_replicas)});
    if let Some(selector) = paths
        .label_selector
        .as_deref()
        .and_then(|p| at(obj, p))
        .and_then(Value::as_str)
    {
        status["selector"] = Value::String(selector.to_string());
    }
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": metadata,
        "spec": {"replicas": replicas(&paths.spec_replicas)},
        "status": status,
    })
}

impl RegistryStore {
    /// The scale subresource the request's version serves.
    fn scale_paths(&self, scope: &RequestScope, name: &str) -> Result<ScaleSubresource> {
        self.def
            .version(&scope.version)
            .and_then(|v| v.scale.clone())
            .ok_or_else(|| Error::NotFound(self.target(name).into()))
    }

    /// Reads the `Scale` of `name`.
    ///
    /// # Errors
    /// `NotFound` (the object, or a version without the subresource); storage errors.
    pub async fn get_scale(
        &self,
        scope: &RequestScope,
        name: &str,
        opts: GetOptions,
    ) -> Result<Value> {
        let paths = self.scale_paths(scope, name)?;
        Ok(scale_of(&self.get(scope, name, opts).await?, &paths))
    }

    /// Changes the `Scale` of `name` through `change` inside the update pipeline (so a conflicting
    /// write retries against the new state); the outcome's object is the new `Scale`.
    ///
    /// # Errors
    /// `NotFound`; `Conflict` when the `Scale` names a stale resourceVersion; `Invalid` for
    /// negative or non-integer replicas; the update's errors.
    pub async fn update_scale(
        &self,
        scope: &RequestScope,
        name: &str,
        change: ScaleFn,
    ) -> Result<Outcome> {
        let paths = self.scale_paths(scope, name)?;
        let target = self.target(name);
        let spec_path = paths.spec_replicas.clone();
        let scale_paths = paths.clone();
        let input: UpdateFn = Arc::new(move |current: Option<&Value>| {
            let current = current.ok_or_else(|| Error::NotFound(target.clone().into()))?;
            let wanted = change(&scale_of(current, &scale_paths))?;
            let given_rv = meta_str(&wanted, "resourceVersion").unwrap_or("");
            let current_rv = meta_str(current, "resourceVersion").unwrap_or("");
            if !given_rv.is_empty() && given_rv != current_rv {
                return Err(Error::modified(&target));
            }
            let replicas = &wanted["spec"]["replicas"];
            let replicas = match replicas.as_i64() {
                Some(n) if n >= 0 && i32::try_from(n).is_ok() => n,
                _ => {
                    let detail = match replicas.as_i64() {
                        Some(n) if n < 0 => format!("{n}: must be greater than or equal to 0"),
                        _ => format!("{replicas}: must be an integer"),
                    };
                    return Err(Error::invalid(
                        &target,
                        FieldError {
                            kind: FieldErrorKind::Invalid,
                            field: "spec.replicas".into(),
                            detail,
                        },
                    ));
                }
            };
            let mut object = current.clone();
            set_at(&mut object, &spec_path, Value::from(replicas));
            Ok(object)
        });
        let outcome = self.update(scope, name, input).await?;
        Ok(Outcome {
            object: scale_of(&outcome.object, &paths),
            ..outcome
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_reads_and_writes_the_declared_paths() {
        let paths = ScaleSubresource {
            spec_replicas: "spec.replicas".into(),
            status_replicas: "status.replicas".into(),
            label_selector: Some("status.selector".into()),
        };
        let obj = json!({"metadata": {"name": "m", "namespace": "d", "resourceVersion": "7", "labels": {"a": "b"}},
                         "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=m"}});
        let scale = scale_of(&obj, &paths);
        assert_eq!(
            scale,
            json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                   "metadata": {"name": "m", "namespace": "d", "resourceVersion": "7"},
                   "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=m"}})
        );
        let empty = scale_of(&json!({"metadata": {"name": "n"}}), &paths);
        assert_eq!(empty["spec"]["replicas"], 0);
        assert!(empty["status"].get("selector").is_none());
        let mut fresh = json!({"metadata": {}});
        set_at(&mut fresh, "spec.deep.replicas", json!(4));
        assert_eq!(fresh["spec"]["deep"]["replicas"], 4);
    }
}
