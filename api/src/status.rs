//! Kubernetes `Status` objects: every error the server answers with is one of these, and the
//! mapping from storage and registry errors to HTTP codes lives here and nowhere else.

use serde_json::{json, Value};

use crate::strategy::FieldError;
use strategy_host_registry::{Error as RegistryError, Target};
use strategy_host_storage::StorageError;

/// One cause of an Invalid error: `{reason, message, field}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, ...
    pub reason: String,
    /// The human-readable message.
    pub message: String,
    /// The field path.
    pub field: String,
}

impl From<&FieldError> for Cause {
    fn from(e: &FieldError) -> Self {
        Self {
            reason: e.kind.cause_type().to_string(),
            message: e.message(),
            field: e.field.clone(),
        }
    }
}

/// `Status.details`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    /// The object's name.
    pub name: String,
    /// The API group.
    pub group: String,
    /// The kind (Kubernetes puts the plural resource here for NotFound and the like).
    pub kind: String,
    /// Field causes.
    pub causes: Vec<Cause>,
}

/// A failed request as Kubernetes reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// The HTTP status code.
    pub code: u16,
    /// The machine-readable reason (`NotFound`, `Conflict`, ...).
    pub reason: &'static str,
    /// The human-readable message.
    pub message: String,
    /// Seconds a client should wait before retrying, when that helps.
    pub retry_after_seconds: Option<u64>,
    /// What the error is about.
    pub details: Option<Box<Details>>,
    /// The HTTP/1 connection ends after this answer (part of the request body was left
    /// unread), which the response says with `Connection: close`.
    pub closes_connection: bool,
}

impl Status {
    /// Builds a Status.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            retry_after_seconds: None,
            details: None,
            closes_connection: false,
        }
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 404 NotFound.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(404, "NotFound", message)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 422 Invalid for a request option (`?fieldManager=`), as Kubernetes words it for
    /// `{kind}.meta.k8s.io` options.
    pub fn invalid_options(field: &str, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        let mut status = Self::new(
            422,
            "Invalid",
            format!("PatchOptions.meta.k8s.io \"\" is invalid: {field}: {detail}"),
        );
        status.details = Some(Box::new(Details {
            group: "meta.k8s.io".into(),
            kind: "PatchOptions".into(),
            causes: vec![Cause {
                reason: if detail.starts_with("Required") {
                    "FieldValueRequired".into()
                } else {
                    "FieldValueInvalid".into()
                },
                message: detail,
                field: field.into(),
            }],
            ..Details::default()
        }));
        status
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(413, "RequestEntityTooLarge", message)
    }

    /// 406 NotAcceptable: none of the media types the client accepts can be served.
    pub fn not_acceptable(served: &[&str]) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                served.join(", ")
            ),
        )
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    /// 429 TooManyRequests.
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        Self {
            retry_after_seconds: Some(1),
            ..Self::new(429, "TooManyRequests", message)
        }
    }

    /// 503 ServiceUnavailable, to be retried after a second.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self {
            retry_after_seconds: Some(1),
            ..Self::new(503, "ServiceUnavailable", message)
        }
    }

    /// 500 InternalError (the message is the error's text, never a backtrace).
    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
    }

    /// 504 Timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self {
            retry_after_seconds: Some(1),
            ..Self::new(504, "Timeout", message)
        }
    }

    fn with_target(mut self, target: &Target, kind: String) -> Self {
        self.details = Some(Box::new(Details {
            name: target.name.clone(),
            group: target.group.clone(),
            kind,
            causes: Vec::new(),
        }));
        self
    }

    /// The `Status` JSON body (`kind: Status`, `apiVersion: v1`).
    pub fn to_json(&self) -> Value {
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if self.reason.is_empty() {
            // `reason` is omitempty in Kubernetes' Status (StatusReasonUnknown).
            body.as_object_mut().map(|m| m.remove("reason"));
        }
        let mut details = serde_json::Map::new();
        if let Some(d) = &self.details {
            if !d.name.is_empty() {
                details.insert("name".into(), json!(d.name));
            }
            if !d.group.is_empty() {
                details.insert("group".into(), json!(d.group));
            }
            if !d.kind.is_empty() {
                details.insert("kind".into(), json!(d.kind));
            }
            if !d.causes.is_empty() {
                let causes: Vec<Value> = d
                    .causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
        }
        if let Some(secs) = self.retry_after_seconds {
            details.insert("retryAfterSeconds".into(), json!(secs));
        }
        if !details.is_empty() {
            body["details"] = Value::Object(details);
        }
        body
    }
}

impl From<&StorageError> for Status {
    fn from(err: &StorageError) -> Self {
        let message = err.to_string();
        match err {
            StorageError::NotFound { .. } => Self::new(404, "NotFound", message),
            StorageError::AlreadyExists { .. } => Self::new(409, "AlreadyExists", message),
            StorageError::Conflict { .. } | StorageError::InvalidObject { .. } => {
                Self::new(409, "Conflict", message)
            }
            StorageError::BadRequest(m) => Self::new(400, "BadRequest", m.clone()),
            StorageError::Expired { .. } => Self::new(410, "Expired", message),
            StorageError::TooLargeResourceVersion { .. } => Self::timeout(message),
            StorageError::Unavailable(_) => Self::service_unavailable(message),
            StorageError::Aborted(_) => Self::internal(message),
            // Kubernetes' words: "Internal error occurred: <what broke>", no storage prefix.
            StorageError::Internal(detail) => Self::internal(detail),
        }
    }
}

impl From<&RegistryError> for Status {
    fn from(err: &RegistryError) -> Self {
        match err {
            RegistryError::Storage { source, target } => {
                let resource = target.qualified_resource();
                let status = match source {
                    StorageError::AlreadyExists { .. } => Self::new(
                        409,
                        "AlreadyExists",
                        format!("{resource} {:?} already exists", target.name),
                    ),
                    other => Self::from(other),
                };
                status.with_target(target, target.plural.clone())
            }
            RegistryError::NotFound(target) => {
                Self::not_found(err.to_string()).with_target(target, target.plural.clone())
            }
            RegistryError::Conflict { target, .. } => Self::new(409, "Conflict", err.to_string())
                .with_target(target, target.plural.clone()),
            RegistryError::Invalid { target, causes } => {
                let causes: Vec<Cause> = causes.iter().map(Cause::from).collect();
                let listed: Vec<String> = causes
                    .iter()
                    .map(|c| {
                        if c.field.is_empty() {
                            c.message.clone()
                        } else {
                            format!("{}: {}", c.field, c.message)
                        }
                    })
                    .collect();
                let message = if listed.len() == 1 {
                    format!("{err}: {}", listed[0])
                } else {
                    format!("{err}: [{}]", listed.join(", "))
                };
                let mut status =
                    Self::new(422, "Invalid", message).with_target(target, target.kind.clone());
                if let Some(d) = status.details.as_mut() {
                    d.causes = causes;
                }
                status
            }
            RegistryError::ApplyConflict { target, conflicts } => {
                let mut status = Self::new(
                    409,
                    "Conflict",
                    strategy_host_registry::fieldmanager::conflicts_message(conflicts),
                )
                .with_target(target, target.plural.clone());
                if let Some(d) = status.details.as_mut() {
                    d.causes = conflicts
                        .iter()
                        .map(|c| Cause {
                            reason: "FieldManagerConflict".into(),
                            message: c.cause_message(),
                            field: c.field.clone(),
                        })
                        .collect();
                }
                status
            }
            RegistryError::Forbidden { target, .. } => Self::new(403, "Forbidden", err.to_string())
                .with_target(target, target.plural.clone()),
            RegistryError::Terminating { target, .. } => {
                let resource = Target {
                    name: String::new(),
                    ..(**target).clone()
                };
                Self::method_not_allowed(err.to_string())
                    .with_target(&resource, target.plural.clone())
            }
            RegistryError::BadRequest(m) => Self::bad_request(m.clone()),
            RegistryError::Denied {
                code,
                reason,
                message,
            } => Self::new(*code, known_reason(reason), message.clone()),
            RegistryError::Strategy(e) => Self::internal(e),
            RegistryError::Internal(m) => Self::internal(m),
            // A plain Go error in kube-apiserver: 500 with no reason and the bare message.
            RegistryError::ResourceVersionSetOnCreate => Self::new(500, "", err.to_string()),
        }
    }
}

/// `reason` as one of Kubernetes' `StatusReason`s (what a webhook's denial may carry); anything
/// else answers with no reason.
fn known_reason(reason: &str) -> &'static str {
    const REASONS: [&str; 18] = [
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "StoreReadError",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "ServiceUnavailable",
    ];
    REASONS.into_iter().find(|r| *r == reason).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::FieldErrorKind;

    #[test]
    fn storage_errors_map_to_kubernetes_codes() {
        let cases = [
            (StorageError::not_found("/k"), 404, "NotFound"),
            (StorageError::already_exists("/k"), 409, "AlreadyExists"),
            (StorageError::conflict("/k", "rv"), 409, "Conflict"),
            (StorageError::BadRequest("x".into()), 400, "BadRequest"),
            (StorageError::compacted(1, 5), 410, "Expired"),
            (
                StorageError::TooLargeResourceVersion {
                    requested: 9,
                    current: 1,
                },
                504,
                "Timeout",
            ),
            (
                StorageError::Unavailable("down".into()),
                503,
                "ServiceUnavailable",
            ),
            (StorageError::Internal("x".into()), 500, "InternalError"),
        ];
        for (err, code, reason) in cases {
            let s = Status::from(&err);
            assert_eq!((s.code, s.reason), (code, reason), "{err}");
            let body = s.to_json();
            assert_eq!(body["kind"], "Status");
            assert_eq!(body["code"], code);
        }
    }

    #[test]
    fn registry_errors_use_kubernetes_wording() {
        let target = Target {
            group: "example.com".into(),
            plural: "widgets".into(),
            kind: "Widget".into(),
            name: "x".into(),
        };
        let s = Status::from(&RegistryError::modified(&target));
        assert_eq!(s.code, 409);
        assert_eq!(s.message, "Operation cannot be fulfilled on widgets.example.com \"x\": the object has been modified; please apply your changes to the latest version and try again");
        let s = Status::from(&RegistryError::NotFound(Box::new(target.clone())));
        assert_eq!(s.message, "widgets.example.com \"x\" not found");
        assert_eq!(s.to_json()["details"]["kind"], "widgets");
        let s = Status::from(&RegistryError::Invalid {
            target: Box::new(target),
            causes: vec![FieldError {
                kind: FieldErrorKind::Required,
                field: "spec.size".into(),
                detail: String::new(),
            }],
        });
        assert_eq!(s.code, 422);
        assert_eq!(
            s.message,
            "Widget.example.com \"x\" is invalid: spec.size: Required value"
        );
        assert_eq!(s.to_json()["details"]["causes"][0]["field"], "spec.size");
        let forbidden = Status::from(&RegistryError::Forbidden {
            target: Box::new(Target {
                group: "rbac.authorization.k8s.io".into(),
                plural: "roles".into(),
                kind: "Role".into(),
                name: "r".into(),
            }),
            message: "user \"bob\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n{}".into(),
        });
        assert_eq!((forbidden.code, forbidden.reason), (403, "Forbidden"));
        assert!(forbidden
            .message
            .starts_with("roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"bob\""));
        assert_eq!(forbidden.to_json()["details"]["kind"], "roles");
        // A bare 500 with no reason, as kube-apiserver answers a create carrying a resourceVersion.
        let s = Status::from(&RegistryError::ResourceVersionSetOnCreate).to_json();
        assert_eq!(s["code"], 500);
        assert!(s.get("reason").is_none(), "{s}");
        assert_eq!(
            s["message"],
            "resourceVersion should not be set on objects to be created"
        );
    }
}
