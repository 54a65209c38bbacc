//! The codec's error: what went wrong, and for a field, where in the object (a JSON path).

use std::fmt;

/// Why a body could not be converted between Kubernetes protobuf and JSON.
///
/// The text is meant for the client (a 400 or 422 answer): a field error names the field's
/// path, e.g. `metadata.managedFields[0].time: expected a string, got number`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtobufError {
    /// The bytes are not a Kubernetes protobuf envelope (no `k8s\0` magic, empty, or a
    /// watch frame whose length prefix does not match).
    NotProtobuf(String),
    /// The bytes are not a valid protobuf encoding of the message they should hold.
    Malformed {
        /// What was being read, e.g. `runtime.Unknown` or `v1 ConfigMap`.
        what: String,
        /// prost's description of the problem.
        message: String,
    },
    /// The envelope names an apiVersion and kind that have no protobuf form here.
    Unsupported {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// A field's value has the wrong JSON type or an invalid value (either direction).
    Field {
        /// Where the field is, from the object's top (`metadata.labels[app]`); empty for the
        /// object itself.
        path: String,
        /// What is wrong with it.
        message: String,
    },
}

impl ProtobufError {
    /// A field error at the current position; callers up the tree prefix the path.
    pub(super) fn invalid(message: impl Into<String>) -> Self {
        Self::Field {
            path: String::new(),
            message: message.into(),
        }
    }

    /// The error `expected <what>, got <JSON type of value>`.
    pub(super) fn expected(what: &str, got: &serde_json::Value) -> Self {
        Self::invalid(format!("expected {what}, got {}", json_type(got)))
    }

    /// This error, seen from the object holding it as field `name`.
    pub(super) fn within(self, name: &str) -> Self {
        self.prefixed(name)
    }

    /// This error, seen from the list holding it at `index`.
    pub(super) fn at_index(self, index: usize) -> Self {
        self.prefixed(&format!("[{index}]"))
    }

    /// This error, seen from the map holding it under `key`.
    pub(super) fn at_key(self, key: &str) -> Self {
        self.prefixed(&format!("[{key}]"))
    }

    /// Prefixes a field error's path with `segment`: `a` + `b` → `a.b`, `a` + `[0]` → `a[0]`.
    fn prefixed(self, segment: &str) -> Self {
        match self {
            Self::Field { path, message } => {
                let sep = if path.is_empty() || path.starts_with('[') {
                    ""
                } else {
                    "."
                };
                Self::Field {
                    path: format!("{segment}{sep}{path}"),
                    message,
                }
            }
            other => other,
        }
    }
}

/// The JSON type of `value`, as an error message names it.
fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

impl fmt::Display for ProtobufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotProtobuf(why) => write!(f, "not a Kubernetes protobuf body: {why}"),
            Self::Malformed { what, message } => {
                write!(f, "invalid protobuf encoding of {what}: {message}")
            }
            Self::Unsupported { api_version, kind } => write!(
                f,
                "no protobuf encoding is served for apiVersion {api_version:?}, kind {kind:?}"
            ),
            Self::Field { path, message } if path.is_empty() => f.write_str(message),
            Self::Field { path, message } => write!(f, "{path}: {message}"),
        }
    }
}

impl std::error::Error for ProtobufError {}
