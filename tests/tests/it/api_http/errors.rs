//! Errors over HTTP: every error (400, 404, 405, 409, 410, 413, 415, 422, 504) answers a
//! Kubernetes Status with the right code and reason, and requests past the in-flight limit
//! answer 429.

use std::time::Duration;

use serde_json::{json, Value};
use strategy_host_e2e::{call, call_with, widget, widget_crd};

use super::{assert_status, start, W};

#[test]
fn every_error_is_a_status() {
    let (host, _dir) = start(&["--max-request-body-bytes", "100000"]);
    let u = |p: &str| host.url(p);
    assert_eq!(
        call("POST", &u(W), Some(&widget("a", 1))).unwrap().code,
        201
    );
    // 400
    assert_status(
        &call_with("POST", &u(W), Some(b"{nope"), &[]).unwrap(),
        400,
        "BadRequest",
    );
    assert_status(&call("POST", &u(W), Some(&json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "k"}}))).unwrap(), 400, "BadRequest");
    assert_status(
        &call("GET", &u(&format!("{W}?labelSelector=a+in+b")), None).unwrap(),
        400,
        "BadRequest",
    );
    assert_status(
        &call("GET", &u(&format!("{W}?fieldSelector=spec.size%3D1")), None).unwrap(),
        400,
        "BadRequest",
    );
    assert_status(
        &call(
            "GET",
            &u(&format!("{W}?resourceVersion=5&continue=x")),
            None,
        )
        .unwrap(),
        400,
        "BadRequest",
    );
    assert_status(
        &call("GET", &u(&format!("{W}?limit=abc")), None).unwrap(),
        400,
        "BadRequest",
    );
    assert_status(
        &call(
            "POST",
            &u(&format!("{W}?dryRun=Some")),
            Some(&widget("d", 1)),
        )
        .unwrap(),
        400,
        "BadRequest",
    );
    let dup = br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"dup"},"spec":{"size":1},"spec":{"size":2}}"#;
    let s = assert_status(
        &call_with(
            "POST",
            &u(&format!("{W}?fieldValidation=Strict")),
            Some(dup),
            &[],
        )
        .unwrap(),
        400,
        "BadRequest",
    );
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("duplicate field \"spec\""),
        "{s}"
    );
    let unknown = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "unk"}, "spec": {"size": 1, "zzz": 2}});
    let s = assert_status(
        &call(
            "POST",
            &u(&format!("{W}?fieldValidation=Strict")),
            Some(&unknown),
        )
        .unwrap(),
        400,
        "BadRequest",
    );
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("unknown field \"spec.zzz\""),
        "{s}"
    );
    let r = call("POST", &u(W), Some(&unknown)).unwrap();
    assert_eq!(r.code, 201, "Warn is the default: {}", r.body);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("299 - ") && w.contains("spec.zzz")),
        "{:?}",
        r.warnings
    );
    assert!(r.json()["spec"].get("zzz").is_none(), "pruned");
    // 404
    assert_status(
        &call("GET", &u("/apis/nothing.example.com/v1/things"), None).unwrap(),
        404,
        "NotFound",
    );
    let s = assert_status(
        &call("GET", &u(&format!("{W}/missing")), None).unwrap(),
        404,
        "NotFound",
    );
    assert_eq!(s["message"], "widgets.example.com \"missing\" not found");
    assert_eq!(s["details"]["name"], "missing");
    assert_eq!(s["details"]["group"], "example.com");
    let s = assert_status(
        &call(
            "POST",
            &u("/apis/example.com/v1/namespaces/ghost/widgets"),
            Some(&widget("g", 1)),
        )
        .unwrap(),
        404,
        "NotFound",
    );
    assert_eq!(s["message"], "namespaces \"ghost\" not found");
    // 405
    assert_status(
        &call("PUT", &u(W), Some(&widget("a", 1))).unwrap(),
        405,
        "MethodNotAllowed",
    );
    assert_status(
        &call("POST", &u(&format!("{W}/a")), Some(&widget("a", 1))).unwrap(),
        405,
        "MethodNotAllowed",
    );
    // 409
    let s = assert_status(
        &call("POST", &u(W), Some(&widget("a", 1))).unwrap(),
        409,
        "AlreadyExists",
    );
    assert_eq!(s["message"], "widgets.example.com \"a\" already exists");
    let mut stale = widget("a", 2);
    stale["metadata"]["resourceVersion"] = json!("1");
    let s = assert_status(
        &call("PUT", &u(&format!("{W}/a")), Some(&stale)).unwrap(),
        409,
        "Conflict",
    );
    assert_eq!(s["message"], "Operation cannot be fulfilled on widgets.example.com \"a\": the object has been modified; please apply your changes to the latest version and try again");
    assert_status(
        &call(
            "DELETE",
            &u(&format!("{W}/a")),
            Some(&json!({"preconditions": {"uid": "other"}})),
        )
        .unwrap(),
        409,
        "Conflict",
    );
    // 410: a watch from before the window.
    for i in 0..5 {
        call("POST", &u(W), Some(&widget(&format!("w{i}"), 1))).unwrap();
    }
    let r = call(
        "GET",
        &u(&format!(
            "{W}?watch=true&resourceVersion=1&timeoutSeconds=2"
        )),
        None,
    )
    .unwrap();
    let first: Value = serde_json::from_str(r.body.lines().next().unwrap_or("{}")).unwrap();
    assert_eq!(first["type"], "ERROR", "{}", r.body);
    assert_eq!(first["object"]["code"], 410);
    assert_eq!(first["object"]["reason"], "Expired");
    // 413
    let big = vec![b' '; 200_000];
    assert_status(
        &call_with("POST", &u(W), Some(&big), &[]).unwrap(),
        413,
        "RequestEntityTooLarge",
    );
    // 415
    assert_status(
        &call_with(
            "POST",
            &u(W),
            Some(b"a: b"),
            &[("Content-Type", "application/yaml")],
        )
        .unwrap(),
        415,
        "UnsupportedMediaType",
    );
    assert_status(
        &call_with(
            "PATCH",
            &u(&format!("{W}/a")),
            Some(b"{}"),
            &[("Content-Type", "application/strategic-merge-patch+json")],
        )
        .unwrap(),
        415,
        "UnsupportedMediaType",
    );
    let s = assert_status(
        &call_with(
            "PATCH",
            &u(&format!("{W}/a")),
            Some(b"{}"),
            &[("Content-Type", "application/apply-patch+yaml")],
        )
        .unwrap(),
        422,
        "Invalid",
    );
    assert!(s["message"]
        .as_str()
        .unwrap()
        .contains("fieldManager: Required value: is required for apply patch"));
    // 422 with one cause per field.
    let bad = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "Bad_Name", "labels": {"-x": "y"}}, "spec": {"size": "big", "color": "pink"}});
    let s = assert_status(&call("POST", &u(W), Some(&bad)).unwrap(), 422, "Invalid");
    let fields: Vec<&str> = s["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    for f in [
        "metadata.name",
        "metadata.labels",
        "spec.size",
        "spec.color",
    ] {
        assert!(fields.contains(&f), "{f} missing: {s}");
    }
    assert_eq!(s["details"]["kind"], "Widget");
    let s = assert_status(&call("POST", &u(W), Some(&json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "nospec"}, "spec": {}}))).unwrap(), 422, "Invalid");
    assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueRequired");
    let mut hook = widget_crd();
    hook["metadata"]["name"] = json!("gadgets.example.com");
    hook["spec"]["names"] = json!({"plural": "gadgets", "kind": "Gadget"});
    // A webhook conversion without its webhook, as Kubernetes refuses it.
    hook["spec"]["conversion"] = json!({"strategy": "Webhook"});
    let s = assert_status(
        &call(
            "POST",
            &u("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
            Some(&hook),
        )
        .unwrap(),
        422,
        "Invalid",
    );
    assert_eq!(
        s["details"]["causes"][0]["field"],
        "spec.conversion.webhook"
    );
    assert_eq!(
        s["details"]["causes"][0]["message"],
        "Required value: required when strategy is set to Webhook"
    );
    // 504: a resourceVersion the store has not reached.
    let r = call("GET", &u(&format!("{W}?resourceVersion=99999999")), None).unwrap();
    assert_status(&r, 504, "Timeout");
}

#[test]
fn too_many_requests_answer_429() {
    let (host, _dir) = start(&["--max-requests-inflight", "1"]);
    // Until the new resource's watch cache has its first list in, reads go to the store, which
    // answers a revision it has not reached at once (504, as etcd does) instead of holding the
    // slot: wait for the cache first. A watch is served only from a ready cache.
    let watch = call(
        "GET",
        &host.url(&format!("{W}?watch=1&timeoutSeconds=1")),
        None,
    )
    .unwrap();
    assert_eq!(watch.code, 200, "{}", watch.body);
    let url = host.url(&format!("{W}?resourceVersion=99999999"));
    // A request that waits for a future revision holds the one slot (until it times out, 504);
    // concurrent ones are refused. Probe until one is: a fixed pause raced a loaded machine,
    // where the waiting request had not arrived yet. A probe holding the slot just as the
    // waiting request arrives gets that one refused instead: then try again.
    for _attempt in 0..5 {
        let slow = std::thread::spawn({
            let url = url.clone();
            move || call("GET", &url, None).unwrap()
        });
        let refused = loop {
            let probe = call("GET", &host.url(W), None).unwrap();
            if probe.code == 429 {
                break Some(probe);
            }
            if slow.is_finished() {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let slow = slow.join().unwrap();
        match refused {
            Some(probe) => {
                assert_status(&probe, 429, "TooManyRequests");
                assert_eq!(slow.code, 504, "{}", slow.body);
                break;
            }
            None => {
                assert_status(&slow, 429, "TooManyRequests");
            }
        }
    }
    assert_eq!(call("GET", &host.url(W), None).unwrap().code, 200);
}
