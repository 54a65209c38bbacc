//! The `audit.k8s.io/v1` `Event`: one JSON line of the audit log, with the levels and stages it
//! is written at, shaped field for field like Kubernetes' type.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::user::UserInfo;
use strategy_host_registry::system_fields::format_rfc3339;

/// How much of a request is recorded, from nothing to both bodies (ordered: `None` is least).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub enum Level {
    /// The request is not recorded.
    None,
    /// Who asked for what, and the answer's status; no bodies.
    #[default]
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Metadata, the request body and the response body.
    RequestResponse,
}

impl Level {
    /// The level's name as a policy spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }

    /// Every level's name, in order.
    pub const NAMES: [&'static str; 4] = ["None", "Metadata", "Request", "RequestResponse"];
}

impl FromStr for Level {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "None" => Ok(Level::None),
            "Metadata" => Ok(Level::Metadata),
            "Request" => Ok(Level::Request),
            "RequestResponse" => Ok(Level::RequestResponse),
            _ => Err(()),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where in a request's life an event is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub enum Stage {
    /// As soon as the request is known, before it is handled.
    #[default]
    RequestReceived,
    /// When the response headers are sent, before the body (long-running requests: watches).
    ResponseStarted,
    /// When the response is complete.
    ResponseComplete,
    /// When the handler panicked.
    Panic,
}

impl Stage {
    /// Every stage's name.
    pub const NAMES: [&'static str; 4] = [
        "RequestReceived",
        "ResponseStarted",
        "ResponseComplete",
        "Panic",
    ];

    const ALL: [Stage; 4] = [
        Stage::RequestReceived,
        Stage::ResponseStarted,
        Stage::ResponseComplete,
        Stage::Panic,
    ];

    /// The stage of a name, as a policy's `omitStages` spells it.
    pub fn parse(s: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .position(|n| *n == s)
            .map(|i| Self::ALL[i])
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of stages (a policy's `omitStages`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StageSet(u8);

impl StageSet {
    /// Adds `stage`.
    pub fn insert(&mut self, stage: Stage) {
        self.0 |= stage.bit();
    }

    /// True when `stage` is in the set.
    pub fn contains(self, stage: Stage) -> bool {
        self.0 & stage.bit() != 0
    }

    /// Both sets' stages.
    pub fn union(self, other: StageSet) -> StageSet {
        StageSet(self.0 | other.0)
    }
}

impl FromIterator<Stage> for StageSet {
    fn from_iter<I: IntoIterator<Item = Stage>>(iter: I) -> Self {
        let mut set = StageSet::default();
        for s in iter {
            set.insert(s);
        }
        set
    }
}

/// `authentication.k8s.io/v1` `UserInfo` as an event carries it (every field omitted when empty).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EventUser {
    /// The user name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// The user's uid.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The user's groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Further attributes.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&UserInfo> for EventUser {
    fn from(u: &UserInfo) -> Self {
        Self {
            username: u.username.clone(),
            uid: u.uid.clone(),
            groups: u.groups.clone(),
            extra: u.extra.clone(),
        }
    }
}

/// The object a resource request is about (`audit.k8s.io/v1` `ObjectReference`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// The plural resource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// The namespace.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid (from the request object, when it names one).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The API group (`""` for core).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The API version.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The object's resourceVersion (from the request object, when it names one).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The subresource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The bounded part of the response's `metav1.Status`: the code always; for a `Status` answer
/// (failures) also its status, message, reason and details.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResponseStatus {
    /// Kubernetes writes the (empty) list metadata of a `Status`.
    pub metadata: EmptyMeta,
    /// `Success` or `Failure`.
    pub status: Option<String>,
    /// The human-readable message.
    pub message: Option<String>,
    /// The machine-readable reason.
    pub reason: Option<String>,
    /// The Status' details.
    pub details: Option<Value>,
    /// The HTTP status code.
    pub code: u16,
}

/// `{}`: the empty `ListMeta` of a `Status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct EmptyMeta {}

/// One audit event (`audit.k8s.io/v1` `Event`).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Always `Event`.
    pub kind: &'static str,
    /// Always `audit.k8s.io/v1`.
    pub api_version: &'static str,
    /// The level the request is recorded at.
    pub level: Level,
    /// The request's id, the same in each of its events (and the `Audit-ID` response header).
    #[serde(rename = "auditID")]
    pub audit_id: String,
    /// The stage this event was written at.
    pub stage: Stage,
    /// The path and query of the request.
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// The Kubernetes verb, or the lower-case HTTP method for non-resource requests.
    pub verb: String,
    /// Who asked (as authenticated).
    pub user: EventUser,
    /// Whom they act as, when they impersonate someone.
    pub impersonated_user: Option<EventUser>,
    /// The client's address and those proxies report (`X-Forwarded-For`, `X-Real-Ip`).
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// The client's `User-Agent`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// The object of a resource request.
    pub object_ref: Option<ObjectRef>,
    /// The response's status (not at `RequestReceived`).
    pub response_status: Option<ResponseStatus>,
    /// The request body as decoded (levels `Request` and `RequestResponse`).
    pub request_object: Option<Value>,
    /// The response body (level `RequestResponse`).
    pub response_object: Option<Value>,
    /// When the request arrived.
    #[serde(serialize_with = "micro_time")]
    pub request_received_timestamp: SystemTime,
    /// When this stage was reached.
    #[serde(serialize_with = "micro_time")]
    pub stage_timestamp: SystemTime,
    /// Notes of the filters and handlers (`authorization.k8s.io/decision`, ...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Default for Event {
    fn default() -> Self {
        Self {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: Level::None,
            audit_id: String::new(),
            stage: Stage::RequestReceived,
            request_uri: String::new(),
            verb: String::new(),
            user: EventUser::default(),
            impersonated_user: None,
            source_ips: Vec::new(),
            user_agent: String::new(),
            object_ref: None,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received_timestamp: UNIX_EPOCH,
            stage_timestamp: UNIX_EPOCH,
            annotations: BTreeMap::new(),
        }
    }
}

/// A time as Kubernetes' `metav1.MicroTime` writes it: RFC 3339 in UTC with microseconds
/// (`2024-05-01T12:00:00.123456Z`).
pub(super) fn format_micro_time(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
    let mut text = format_rfc3339(secs);
    // `...:SSZ` → `...:SS.ffffffZ`
    text.pop();
    text.push_str(&format!(".{:06}Z", since.subsec_micros()));
    text
}

fn micro_time<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_micro_time(*t))
}
