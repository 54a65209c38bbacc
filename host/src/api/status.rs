//! Kubernetes `Status` objects: every error the server answers with is one of these, and the
//! mapping from storage errors to HTTP codes lives here and nowhere else.

use serde_json::{json, Value};

use crate::storage::StorageError;

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
}

impl Status {
    /// Builds a Status.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            retry_after_seconds: None,
        }
    }

    /// 404 NotFound.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(404, "NotFound", message)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
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
        if let Some(secs) = self.retry_after_seconds {
            body["details"] = json!({"retryAfterSeconds": secs});
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
            StorageError::BadRequest(_) => Self::new(400, "BadRequest", message),
            StorageError::Expired { .. } => Self::new(410, "Expired", message),
            StorageError::TooLargeResourceVersion { .. } => Self {
                retry_after_seconds: Some(1),
                ..Self::new(504, "Timeout", message)
            },
            StorageError::Unavailable(_) => Self {
                retry_after_seconds: Some(1),
                ..Self::new(503, "ServiceUnavailable", message)
            },
            StorageError::Aborted(_) | StorageError::Internal(_) => {
                Self::new(500, "InternalError", message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
