//! The filter around a request: stages written, the `Audit-ID` header, objects and
//! annotations the handlers add, `Status` answers, watches and panics.

use std::net::{IpAddr, Ipv4Addr};

use http_body_util::BodyExt as _;
use hyper::{HeaderMap, Request, Response};
use serde_json::{json, Value};

use super::{non_resource, resource, Buffer};
use crate::audit::event::Level;
use crate::audit::filter::{source_ips, AUDIT_ID_HEADER};
use crate::audit::policy::Policy;
use crate::audit::sink::Sink;
use crate::audit::LogRotation;
use crate::audit::{mark_panicked, set_decision, AuditContext, Auditor};
use crate::response::{self, Body};
use crate::status::Status;
use strategy_host_authorization::Attributes;

const PEER: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn auditor(policy: Policy) -> (Auditor, Buffer) {
    let out = Buffer::default();
    let sink = Sink::with_writer(Box::new(out.clone()), 64);
    (Auditor::new(policy, sink), out)
}

fn policy(yaml: &str) -> Policy {
    Policy::parse(&format!(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\n{yaml}"
    ))
    .unwrap()
    .0
}

fn request(uri: &str) -> Request<()> {
    Request::builder()
        .uri(uri)
        .header("user-agent", "kubectl/v1.35.0 (linux/amd64)")
        .body(())
        .unwrap()
}

/// Runs one request through the filter: `handle` plays the handlers, answering the response.
fn run(
    auditor: &Auditor,
    attrs: &Attributes,
    mut req: Request<()>,
    handle: impl FnOnce(&AuditContext) -> Response<Body>,
) -> Response<Body> {
    let audit = auditor.begin(attrs, &mut req, PEER);
    let mut response = handle(&AuditContext::of(req.extensions()));
    audit.complete(&mut response);
    response
}

/// The events `policy` writes for one request to `uri` (see [`run`]).
fn audited(
    policy: Policy,
    attrs: &Attributes,
    uri: &str,
    handle: impl FnOnce(&AuditContext) -> Response<Body>,
) -> Vec<Value> {
    let (a, out) = auditor(policy);
    run(&a, attrs, request(uri), handle);
    written(a, &out)
}

/// The events a policy of `level` alone writes for a ConfigMap created in `default`.
fn configmap_create(
    level: Level,
    handle: impl FnOnce(&AuditContext) -> Response<Body>,
) -> Vec<Value> {
    let attrs = resource("create", "", "configmaps", "default", "");
    audited(
        Policy::single(level),
        &attrs,
        "/api/v1/namespaces/default/configmaps",
        handle,
    )
}

/// The events written once the auditor (and everything holding its sink) is gone.
fn written(auditor: Auditor, out: &Buffer) -> Vec<Value> {
    drop(auditor);
    out.events()
}

fn stages(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect()
}

#[test]
fn level_none_writes_nothing_but_still_answers_an_audit_id() {
    let (a, out) = auditor(Policy::single(Level::None));
    let mut req = request("/api/v1/pods");
    let audit = a.begin(&resource("list", "", "pods", "", ""), &mut req, PEER);
    assert!(req.extensions().get::<AuditContext>().is_none());
    let mut response = response::json(200, &json!({}), &[]);
    audit.complete(&mut response);
    let id = response.headers()[&AUDIT_ID_HEADER].to_str().unwrap();
    assert_eq!(id.len(), 36, "{id}");
    assert!(written(a, &out).is_empty());
}

#[test]
fn metadata_writes_received_and_complete_with_the_same_id() {
    let (a, out) = auditor(Policy::single(Level::Metadata));
    let attrs = resource("get", "", "pods", "default", "web");
    let mut req = request("/api/v1/namespaces/default/pods/web?timeout=5s");
    req.headers_mut()
        .insert("x-forwarded-for", "10.0.0.1, 10.0.0.2".parse().unwrap());
    let response = run(&a, &attrs, req, |ctx| {
        ctx.log_response_object(&json!({"kind": "Pod"}));
        response::json(200, &json!({"kind": "Pod"}), &[])
    });
    let id = response.headers()[&AUDIT_ID_HEADER]
        .to_str()
        .unwrap()
        .to_string();
    let events = written(a, &out);
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    let (received, complete) = (&events[0], &events[1]);
    assert_eq!(received["auditID"], id.as_str());
    assert_eq!(complete["auditID"], id.as_str());
    assert_eq!(
        received["stageTimestamp"],
        received["requestReceivedTimestamp"]
    );
    assert!(received.get("responseStatus").is_none());
    assert_eq!(complete["level"], "Metadata");
    assert_eq!(complete["verb"], "get");
    assert_eq!(
        complete["requestURI"],
        "/api/v1/namespaces/default/pods/web?timeout=5s"
    );
    assert_eq!(complete["user"]["username"], "alice");
    assert_eq!(
        complete["sourceIPs"],
        json!(["10.0.0.1", "10.0.0.2", "127.0.0.1"])
    );
    assert_eq!(complete["userAgent"], "kubectl/v1.35.0 (linux/amd64)");
    assert_eq!(
        complete["objectRef"],
        json!({"resource": "pods", "namespace": "default", "name": "web", "apiVersion": "v1"})
    );
    assert_eq!(
        complete["responseStatus"],
        json!({"metadata": {}, "code": 200})
    );
    assert!(complete.get("responseObject").is_none(), "not at Metadata");
}

#[test]
fn a_client_audit_id_is_kept() {
    let (a, out) = auditor(Policy::single(Level::Metadata));
    let mut req = request("/version");
    req.headers_mut()
        .insert(AUDIT_ID_HEADER, "my-id".parse().unwrap());
    let response = run(&a, &non_resource("get", "/version"), req, |_| {
        response::json(200, &json!({}), &[])
    });
    assert_eq!(response.headers()[&AUDIT_ID_HEADER], "my-id");
    let events = written(a, &out);
    assert!(events.iter().all(|e| e["auditID"] == "my-id"));
    assert!(events[0].get("objectRef").is_none(), "non-resource request");
}

#[test]
fn request_level_records_the_request_object_and_fills_the_object_ref() {
    let body = json!({"kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default", "managedFields": [{}]}});
    let events = configmap_create(Level::Request, |ctx| {
        ctx.log_request_object(&body);
        ctx.log_response_object(&body);
        response::json(201, &body, &[])
    });
    assert!(
        events[0].get("requestObject").is_none(),
        "not known yet at RequestReceived"
    );
    let complete = &events[1];
    assert_eq!(complete["requestObject"], body);
    assert_eq!(complete["objectRef"]["name"], "cm");
    assert!(complete.get("responseObject").is_none(), "not at Request");
    assert_eq!(complete["responseStatus"]["code"], 201);
}

#[test]
fn metadata_level_names_the_object_without_recording_it() {
    let events = configmap_create(Level::Metadata, |ctx| {
        ctx.log_request_object(&json!({"metadata": {"name": "cm", "uid": "u1"}}));
        ctx.log_request_body(|| panic!("not built below Request"));
        response::json(201, &json!({}), &[])
    });
    let complete = &events[1];
    assert_eq!(complete["objectRef"]["name"], "cm");
    assert_eq!(complete["objectRef"]["uid"], "u1");
    assert!(complete.get("requestObject").is_none());
}

#[test]
fn request_response_records_both_without_managed_fields_when_asked() {
    let attrs = resource("list", "", "configmaps", "default", "");
    let list = json!({"kind": "ConfigMapList", "metadata": {}, "items": [
        {"metadata": {"name": "a", "managedFields": [{"manager": "kubectl"}]}}
    ]});
    let events = audited(
        policy("omitManagedFields: true\nrules: [{level: RequestResponse}]"),
        &attrs,
        "/api/v1/namespaces/default/configmaps",
        |ctx| {
            ctx.log_request_body(|| Some(json!({"patch": true})));
            ctx.log_response_object(&list);
            response::json(200, &list, &[])
        },
    );
    let complete = &events[1];
    assert_eq!(complete["requestObject"], json!({"patch": true}));
    assert_eq!(
        complete["responseObject"],
        json!({"kind": "ConfigMapList", "metadata": {}, "items": [{"metadata": {"name": "a"}}]})
    );
}

#[test]
fn a_status_answer_gives_its_reason_and_message() {
    let attrs = resource("get", "", "pods", "default", "nope");
    let events = audited(
        Policy::single(Level::RequestResponse),
        &attrs,
        "/api/v1/namespaces/default/pods/nope",
        |_| response::status(&Status::not_found("pods \"nope\" not found")),
    );
    let complete = &events[1];
    let status = &complete["responseStatus"];
    assert_eq!(status["metadata"], json!({}));
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "pods \"nope\" not found");
    assert_eq!(status["code"], 404);
    assert_eq!(complete["responseObject"]["kind"], "Status");
}

#[test]
fn the_authorization_decision_is_annotated() {
    let (a, out) = auditor(Policy::single(Level::Metadata));
    let attrs = resource("delete", "", "pods", "default", "web");
    let mut req = request("/api/v1/namespaces/default/pods/web");
    let audit = a.begin(&attrs, &mut req, PEER);
    set_decision(req.extensions(), false, "no RBAC policy matched");
    let mut response = response::status(&Status::new(403, "Forbidden", "forbidden"));
    audit.complete(&mut response);
    drop(req);
    let events = written(a, &out);
    assert!(events[0].get("annotations").is_none());
    assert_eq!(
        events[1]["annotations"],
        json!({"authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": "no RBAC policy matched"})
    );
    // Without an audited request it does nothing.
    set_decision(request("/").extensions(), true, "");
}

#[test]
fn omitted_stages_are_not_written() {
    let events = audited(
        policy("omitStages: [RequestReceived]\nrules: [{level: Metadata}]"),
        &non_resource("get", "/healthz"),
        "/healthz",
        |_| response::text(200, "ok".into()),
    );
    assert_eq!(stages(&events), ["ResponseComplete"]);
}

#[tokio::test]
async fn a_watch_is_complete_when_its_stream_ends() {
    let (a, out) = auditor(Policy::single(Level::Metadata));
    let attrs = resource("watch", "", "pods", "default", "");
    let mut response = run(
        &a,
        &attrs,
        request("/api/v1/namespaces/default/pods?watch=1"),
        |_| response::json(200, &json!({"type": "ADDED"}), &[]),
    );
    // The body still streams through.
    let body = std::mem::replace(response.body_mut(), response::full(""));
    let bytes = body.collect().await.unwrap().to_bytes();
    assert_eq!(&bytes[..], br#"{"type":"ADDED"}"#);
    drop(response);
    let events = written(a, &out);
    assert_eq!(
        stages(&events),
        ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    );
    assert_eq!(events[1]["responseStatus"]["code"], 200);
    assert_eq!(events[2]["responseStatus"]["code"], 200);
    assert!(events[2]["stageTimestamp"].as_str() >= events[1]["stageTimestamp"].as_str());
}

#[test]
fn a_panicked_handler_is_written_at_the_panic_stage() {
    let boom = non_resource("get", "/boom");
    let events = audited(Policy::single(Level::Metadata), &boom, "/boom", |_| {
        let mut r = response::status(&Status::internal("the request could not be completed"));
        mark_panicked(&mut r, "index out of bounds");
        r
    });
    assert_eq!(stages(&events), ["RequestReceived", "Panic"]);
    assert_eq!(
        events[1]["responseStatus"],
        json!({"metadata": {}, "status": "Failure", "message": "APIServer panic'd: index out of bounds", "reason": "InternalError", "code": 500})
    );
}

#[test]
fn source_ips_follow_kubernetes() {
    let headers = |pairs: &[(&'static str, &str)]| {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    };
    let peer: IpAddr = "192.168.1.9".parse().unwrap();
    assert_eq!(source_ips(&HeaderMap::new(), peer), ["192.168.1.9"]);
    assert_eq!(
        source_ips(
            &headers(&[("x-forwarded-for", "1.1.1.1, bogus, 2.2.2.2")]),
            peer
        ),
        ["1.1.1.1", "2.2.2.2", "192.168.1.9"]
    );
    assert_eq!(
        source_ips(
            &headers(&[("x-forwarded-for", "1.1.1.1"), ("x-real-ip", "1.1.1.1")]),
            peer
        ),
        ["1.1.1.1", "192.168.1.9"],
        "X-Real-Ip already listed"
    );
    assert_eq!(
        source_ips(
            &headers(&[("x-real-ip", "3.3.3.3")]),
            "3.3.3.3".parse().unwrap()
        ),
        ["3.3.3.3"],
        "the peer is the last listed"
    );
    assert_eq!(
        source_ips(&HeaderMap::new(), "::ffff:10.1.2.3".parse().unwrap()),
        ["10.1.2.3"]
    );
}

#[test]
fn long_user_agents_are_cut() {
    let (a, out) = auditor(Policy::single(Level::Metadata));
    let mut req = request("/version");
    req.headers_mut()
        .insert("user-agent", "x".repeat(2000).parse().unwrap());
    run(&a, &non_resource("get", "/version"), req, |_| {
        response::text(200, String::new())
    });
    let ua = written(a, &out)[0]["userAgent"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(ua, format!("{}...TRUNCATED", "x".repeat(1024)));
}

#[test]
fn from_flags_needs_a_log_path_and_a_known_level() {
    assert!(
        Auditor::from_flags(None, None, "Metadata", LogRotation::default())
            .unwrap()
            .is_none()
    );
    let err = Auditor::from_flags(None, None, "Loud", LogRotation::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("--audit-level \"Loud\""), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let a = Auditor::from_flags(Some(&log), None, "Request", LogRotation::default())
        .unwrap()
        .unwrap();
    run(
        &a,
        &non_resource("get", "/version"),
        request("/version"),
        |_| response::text(200, String::new()),
    );
    drop(a);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(stages(&lines), ["RequestReceived", "ResponseComplete"]);
    assert_eq!(lines[0]["level"], "Request");
    let bad = dir.path().join("policy.yaml");
    std::fs::write(&bad, "kind: Policy\n").unwrap();
    let err = Auditor::from_flags(Some(&log), Some(&bad), "Metadata", LogRotation::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("policy.yaml"), "{err}");
}
