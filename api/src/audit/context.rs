//! The per-request audit context: the event being built, kept in the request's extensions so
//! the filters and the verbs can add to it (the authorization decision, the request and
//! response objects), as Kubernetes' `audit.LogRequestObject` / `LogResponseObject` do.
//! A request not audited carries none, and every helper is then a no-op.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use hyper::http::Extensions;
use serde_json::Value;

use super::event::{Event, EventUser, Level, Stage, StageSet};
use super::sink::Sink;

/// The annotation naming the authorization decision (`allow` or `forbid`).
pub(super) const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
/// The annotation giving the authorizer's reason.
pub(super) const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// A request's audit context; the default (a request not audited) ignores everything.
#[derive(Clone, Default)]
pub struct AuditContext(Option<Arc<Shared>>);

/// What one audited request's handlers share.
pub(super) struct Shared {
    /// The request's level (never `None` here).
    pub(super) level: Level,
    /// The stages not written.
    pub(super) omit_stages: StageSet,
    /// Whether objects are written without `metadata.managedFields`.
    pub(super) omit_managed_fields: bool,
    /// The event, completed as the request goes.
    pub(super) event: Mutex<Event>,
    /// Where events go.
    pub(super) sink: Arc<Sink>,
}

impl AuditContext {
    /// The context of an audited request.
    pub(super) fn new(shared: Shared) -> Self {
        Self(Some(Arc::new(shared)))
    }

    /// The context a request carries in its extensions (a no-op one when it is not audited).
    pub fn of(extensions: &Extensions) -> Self {
        extensions
            .get::<AuditContext>()
            .cloned()
            .unwrap_or_default()
    }

    pub(super) fn shared(&self) -> Option<&Arc<Shared>> {
        self.0.as_ref()
    }

    /// Records the decoded request body of a create, update or delete: at `Metadata` and above
    /// the object reference takes the names it lacks from the object's metadata (name,
    /// namespace, uid, resourceVersion); at `Request` and above the object itself is kept.
    pub fn log_request_object(&self, obj: &Value) {
        let Some(shared) = &self.0 else { return };
        let mut event = shared.lock();
        if let Some(object_ref) = &mut event.object_ref {
            let meta = |field: &str| -> String {
                obj.get("metadata")
                    .and_then(|m| m.get(field))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let fill = |slot: &mut String, field: &str| {
                if slot.is_empty() {
                    *slot = meta(field);
                }
            };
            fill(&mut object_ref.namespace, "namespace");
            fill(&mut object_ref.name, "name");
            fill(&mut object_ref.uid, "uid");
            fill(&mut object_ref.resource_version, "resourceVersion");
        }
        if shared.level >= Level::Request {
            event.request_object = Some(shared.recorded(obj));
        }
    }

    /// Records a patch (or other body that is not an object) as the request object, at
    /// `Request` and above; `body` is only called then.
    pub fn log_request_body(&self, body: impl FnOnce() -> Option<Value>) {
        let Some(shared) = &self.0 else { return };
        if shared.level < Level::Request {
            return;
        }
        if let Some(value) = body() {
            shared.lock().request_object = Some(value);
        }
    }

    /// Records the object `obj` makes, at `RequestResponse` only (for responses that hold no
    /// tree of their own, such as a list written from shared bytes).
    pub fn log_response_object_with(&self, obj: impl FnOnce() -> Value) {
        if self
            .0
            .as_ref()
            .is_some_and(|shared| shared.level >= Level::RequestResponse)
        {
            self.log_response_object(&obj());
        }
    }

    /// Records the object a response carries, at `RequestResponse`.
    pub fn log_response_object(&self, obj: &Value) {
        let Some(shared) = &self.0 else { return };
        if shared.level < Level::RequestResponse {
            return;
        }
        let value = shared.recorded(obj);
        shared.lock().response_object = Some(value);
    }

    /// Records the user the request acts as (`impersonatedUser`), in the events written from
    /// now on; `user` stays the one who asked.
    pub fn log_impersonated_user(&self, user: &crate::user::UserInfo) {
        if let Some(shared) = &self.0 {
            shared.lock().impersonated_user = Some(EventUser::from(user));
        }
    }

    /// Whether the request is audited (annotations go somewhere).
    pub fn is_audited(&self) -> bool {
        self.0.is_some()
    }

    /// Adds an annotation to the request's events (those written from now on).
    pub fn annotate(&self, key: &str, value: &str) {
        if let Some(shared) = &self.0 {
            shared
                .lock()
                .annotations
                .insert(key.to_string(), value.to_string());
        }
    }
}

impl std::fmt::Debug for AuditContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditContext")
            .field("audited", &self.0.is_some())
            .finish()
    }
}

impl strategy_host_registry::admission::AuditAnnotations for AuditContext {
    fn annotate(&self, key: &str, value: &str) {
        AuditContext::annotate(self, key, value);
    }
}

/// Records the authorization decision on the request's audit event, as Kubernetes'
/// authorization filter does: `authorization.k8s.io/decision` (`allow` or `forbid`) and
/// `authorization.k8s.io/reason`.
pub fn set_decision(extensions: &Extensions, allowed: bool, reason: &str) {
    let Some(context) = extensions.get::<AuditContext>() else {
        return;
    };
    context.annotate(
        DECISION_ANNOTATION,
        if allowed { "allow" } else { "forbid" },
    );
    context.annotate(REASON_ANNOTATION, reason);
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, Event> {
        self.event.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of `obj` to record: without managed fields when the policy says so.
    fn recorded(&self, obj: &Value) -> Value {
        let mut copy = obj.clone();
        if self.omit_managed_fields {
            strip_managed_fields(&mut copy);
        }
        copy
    }

    /// Writes `event` at `stage` unless the policy omits that stage. `RequestReceived` is
    /// stamped with the time the request arrived, the others with now.
    pub(super) fn emit(&self, mut event: Event, stage: Stage) {
        if self.omit_stages.contains(stage) {
            return;
        }
        event.stage = stage;
        event.stage_timestamp = if stage == Stage::RequestReceived {
            event.request_received_timestamp
        } else {
            SystemTime::now()
        };
        self.sink.process(Box::new(event));
    }
}

/// Removes `metadata.managedFields` from an object, each item of a list, and each row object
/// of a Table (Kubernetes' `copyWithoutManagedFields`).
pub(super) fn strip_managed_fields(obj: &mut Value) {
    fn strip(o: &mut Value) {
        if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
    }
    strip(obj);
    if let Some(items) = obj.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip);
    }
    if let Some(rows) = obj.get_mut("rows").and_then(Value::as_array_mut) {
        for row in rows {
            if let Some(o) = row.get_mut("object") {
                strip(o);
            }
        }
    }
}
