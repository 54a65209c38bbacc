//! The audit filter the server calls around each request: [`Auditor::begin`] decides the level
//! from the policy, writes `RequestReceived` and puts the [`AuditContext`] into the request's
//! extensions; [`RequestAudit::complete`] adds the `Audit-ID` header and writes
//! `ResponseComplete` (a watch: `ResponseStarted` now, `ResponseComplete` when its stream ends;
//! a panic: `Panic`).

use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use http_body_util::BodyExt as _;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{HeaderMap, Request, Response};

use super::context::{AuditContext, Shared};
use super::event::{Event, EventUser, Level, ObjectRef, ResponseStatus, Stage};
use super::policy::Policy;
use super::rotate::LogRotation;
use super::sink::{AuditMetrics, Sink, DEFAULT_CAPACITY};
use super::{Error, Result};
use crate::response::Body;
use crate::status::Status;
use strategy_host_authorization::Attributes;
use strategy_host_registry::system_fields::new_uid;

/// The header carrying a request's audit id, in both directions (Kubernetes' `Audit-ID`).
pub(super) const AUDIT_ID_HEADER: HeaderName = HeaderName::from_static("audit-id");
/// Longer `User-Agent`s are cut to this many bytes, as Kubernetes does.
const MAX_USER_AGENT: usize = 1024;

/// The audit log: the policy and the sink (cheap to clone).
#[derive(Clone)]
pub struct Auditor {
    policy: Arc<Policy>,
    sink: Arc<Sink>,
}

impl Auditor {
    /// The auditor the flags ask for: none without `--audit-log-path`; otherwise the policy of
    /// `--audit-policy-file`, or `--audit-level` (`None`, `Metadata`, `Request`,
    /// `RequestResponse`) for every request.
    ///
    /// # Errors
    /// An unknown level, a policy file that cannot be read or is invalid (the error names the
    /// file and each problem), a log file that cannot be opened.
    pub fn from_flags(
        log_path: Option<&Path>,
        policy_file: Option<&Path>,
        level: &str,
        rotation: LogRotation,
    ) -> Result<Option<Self>> {
        let level: Level = level
            .parse()
            .map_err(|()| Error::UnknownLevel(level.to_string()))?;
        let policy = match policy_file {
            Some(file) => Policy::load(file)?,
            None => Policy::single(level),
        };
        let Some(log_path) = log_path else {
            if policy_file.is_some() {
                tracing::warn!(
                    "--audit-policy-file is set but --audit-log-path is not: nothing is audited"
                );
            }
            return Ok(None);
        };
        let sink = Sink::open(log_path, DEFAULT_CAPACITY, rotation)?;
        tracing::info!(path = %log_path.display(), "writing the audit log");
        Ok(Some(Self::new(policy, sink)))
    }

    /// An auditor with the given policy and sink.
    pub fn new(policy: Policy, sink: Sink) -> Self {
        Self {
            policy: Arc::new(policy),
            sink: Arc::new(sink),
        }
    }

    /// The audit log's counters (for `/metrics`).
    pub fn metrics(&self) -> &AuditMetrics {
        self.sink.metrics()
    }

    /// Starts auditing `req`, which `attributes` describe (after authentication): decides its
    /// level, and unless `None` writes `RequestReceived` (unless the policy omits it) and puts
    /// the request's [`AuditContext`] into its extensions. `peer` is the connection's address.
    pub fn begin<B>(
        &self,
        attributes: &Attributes,
        req: &mut Request<B>,
        peer: IpAddr,
    ) -> RequestAudit {
        let config = self.policy.evaluate(attributes);
        let audit_id = req
            .headers()
            .get(&AUDIT_ID_HEADER)
            .filter(|v| !v.is_empty())
            .cloned()
            .unwrap_or_else(|| {
                HeaderValue::from_str(&new_uid()).unwrap_or(HeaderValue::from_static(""))
            });
        if config.level == Level::None {
            return RequestAudit {
                audit_id,
                context: AuditContext::default(),
                long_running: false,
            };
        }
        let event = Event {
            level: config.level,
            audit_id: String::from_utf8_lossy(audit_id.as_bytes()).into_owned(),
            request_uri: req.uri().path_and_query().map_or_else(
                || req.uri().path().to_string(),
                |pq| pq.as_str().to_string(),
            ),
            verb: attributes.verb.clone(),
            user: EventUser::from(&attributes.user),
            source_ips: source_ips(req.headers(), peer),
            user_agent: user_agent(req.headers()),
            object_ref: attributes.resource_request.then(|| ObjectRef {
                resource: attributes.resource.clone(),
                namespace: attributes.namespace.clone(),
                name: attributes.name.clone(),
                api_group: attributes.api_group.clone(),
                api_version: attributes.api_version.clone(),
                subresource: attributes.subresource.clone(),
                ..ObjectRef::default()
            }),
            request_received_timestamp: SystemTime::now(),
            ..Event::default()
        };
        let shared = Shared {
            level: config.level,
            omit_stages: config.omit_stages,
            omit_managed_fields: config.omit_managed_fields,
            event: Mutex::new(event.clone()),
            sink: self.sink.clone(),
        };
        shared.emit(event, Stage::RequestReceived);
        let context = AuditContext::new(shared);
        req.extensions_mut().insert(context.clone());
        RequestAudit {
            audit_id,
            context,
            long_running: attributes.resource_request && attributes.verb == "watch",
        }
    }
}

/// One request's audit, from [`Auditor::begin`] to [`RequestAudit::complete`].
#[must_use = "complete the audit with the response"]
pub struct RequestAudit {
    audit_id: HeaderValue,
    context: AuditContext,
    long_running: bool,
}

/// Marks a response as the answer to a panicked handler, so its audit is written at the
/// `Panic` stage (the message says what the panic said).
#[derive(Debug, Clone)]
pub(super) struct Panicked(pub String);

/// Marks `response` as answering a handler that panicked with `message`.
pub fn mark_panicked(response: &mut Response<Body>, message: impl Into<String>) {
    response.extensions_mut().insert(Panicked(message.into()));
}

impl RequestAudit {
    /// Ends the audit with the response about to be sent: sets the `Audit-ID` header and
    /// writes the response's status (a `Status` answer's reason and message too) at
    /// `ResponseComplete`, or `Panic` for a response [`mark_panicked`]. For a watch it writes
    /// `ResponseStarted` now and `ResponseComplete` when the response body is dropped (the
    /// stream ended or the client left).
    pub fn complete(self, response: &mut Response<Body>) {
        if !response.headers().contains_key(&AUDIT_ID_HEADER) {
            response
                .headers_mut()
                .insert(AUDIT_ID_HEADER, self.audit_id);
        }
        let Some(shared) = self.context.shared().cloned() else {
            return;
        };
        let status = response.extensions().get::<Status>();
        let mut event = std::mem::take(&mut *shared.lock());
        if let Some(Panicked(message)) = response.extensions().get::<Panicked>() {
            event.response_status = Some(ResponseStatus {
                status: Some("Failure".into()),
                reason: Some("InternalError".into()),
                message: Some(format!("APIServer panic'd: {message}")),
                code: 500,
                ..ResponseStatus::default()
            });
            shared.emit(event, Stage::Panic);
            return;
        }
        event.response_status = Some(response_status(response.status().as_u16(), status));
        if let Some(status) = status {
            if shared.level >= Level::RequestResponse && event.response_object.is_none() {
                event.response_object = Some(status.to_json());
            }
        }
        if !self.long_running {
            shared.emit(event, Stage::ResponseComplete);
            return;
        }
        shared.emit(event.clone(), Stage::ResponseStarted);
        *shared.lock() = event;
        let done = StreamEnd(shared);
        let body = std::mem::replace(response.body_mut(), crate::response::full(""));
        *response.body_mut() = body
            .map_frame(move |frame| {
                let _ = &done;
                frame
            })
            .boxed_unsync();
    }
}

/// Writes a watch's `ResponseComplete` when its body is dropped.
struct StreamEnd(Arc<Shared>);

impl Drop for StreamEnd {
    fn drop(&mut self) {
        let event = std::mem::take(&mut *self.0.lock());
        self.0.emit(event, Stage::ResponseComplete);
    }
}

/// The event's `responseStatus`: the code, and a `Status` answer's bounded fields.
fn response_status(code: u16, status: Option<&Status>) -> ResponseStatus {
    let Some(status) = status else {
        return ResponseStatus {
            code,
            ..ResponseStatus::default()
        };
    };
    let json = status.to_json();
    ResponseStatus {
        status: Some("Failure".into()),
        message: Some(status.message.clone()),
        reason: (!status.reason.is_empty()).then(|| status.reason.to_string()),
        details: json.get("details").cloned(),
        code,
        ..ResponseStatus::default()
    }
}

/// The request's `User-Agent`, cut to [`MAX_USER_AGENT`] bytes (`...TRUNCATED` marks a cut).
fn user_agent(headers: &HeaderMap) -> String {
    let Some(ua) = headers.get(hyper::header::USER_AGENT) else {
        return String::new();
    };
    let text = String::from_utf8_lossy(ua.as_bytes());
    if text.len() <= MAX_USER_AGENT {
        return text.into_owned();
    }
    let mut cut = MAX_USER_AGENT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...TRUNCATED", &text[..cut])
}

/// The client's addresses as Kubernetes lists them: those of `X-Forwarded-For`, then
/// `X-Real-Ip` unless already listed, then the connection's peer unless it is the last one.
pub(super) fn source_ips(headers: &HeaderMap, peer: IpAddr) -> Vec<String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    // An IPv4 address written as IPv6 (`::ffff:10.0.0.1`) is the IPv4 address.
    let parse = |s: &str| s.trim().parse::<IpAddr>().ok().map(|ip| ip.to_canonical());
    let peer = peer.to_canonical();
    let mut ips: Vec<IpAddr> = header("x-forwarded-for")
        .map(|list| list.split(',').filter_map(parse).collect())
        .unwrap_or_default();
    if let Some(real) = header("x-real-ip").and_then(parse) {
        if !ips.contains(&real) {
            ips.push(real);
        }
    }
    if ips.last() != Some(&peer) {
        ips.push(peer);
    }
    ips.iter().map(IpAddr::to_string).collect()
}
