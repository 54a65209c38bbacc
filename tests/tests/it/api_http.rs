//! End-to-end over HTTP against the real binary on the embedded store: every error answers a
//! Kubernetes Status with the right code; the registry's system fields, status subresource,
//! finalizers, dry runs and deletecollection (reads — tables, paging, discovery, watches — are
//! in `api_http_reads.rs`).

use std::time::Duration;

use serde_json::{json, Value};
use strategy_host_e2e::{call, call_with, widget, widget_crd, HostProcess, Reply};

/// The widgets of the default namespace.
pub(crate) const W: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// A host on a fresh embedded store with `extra` arguments, serving the widget CRD.
pub(crate) fn start(extra: &[&str]) -> (HostProcess, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let mut args = vec!["--data-dir", data.as_str()];
    args.extend_from_slice(extra);
    let host = HostProcess::start(&args).unwrap();
    let r = call(
        "POST",
        &host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        Some(&widget_crd()),
    )
    .unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    (host, dir)
}

fn assert_status(r: &Reply, code: u16, reason: &str) -> Value {
    let s = r.json();
    assert_eq!(r.code, code, "{}", r.body);
    assert_eq!(s["kind"], "Status", "{}", r.body);
    assert_eq!(s["apiVersion"], "v1");
    assert_eq!(s["status"], "Failure");
    assert_eq!(s["code"], code);
    assert_eq!(s["reason"], reason, "{}", r.body);
    assert!(!s["message"].as_str().unwrap_or("").contains("panicked"));
    s
}

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

#[test]
fn registry_semantics() {
    let (host, _dir) = start(&[]);
    let u = |p: &str| host.url(p);
    let created = call("POST", &u(W), Some(&json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"generateName": "gen-"}, "spec": {"size": 1}, "status": {"x": 1}}))).unwrap();
    assert_eq!(created.code, 201);
    let obj = created.json();
    let name = obj["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    assert_eq!(obj["metadata"]["generation"], 1);
    assert_eq!(obj["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert!(obj["metadata"]["creationTimestamp"].is_string());
    assert!(
        obj.get("status").is_none(),
        "status is dropped on create when /status is served"
    );
    assert_eq!(obj["spec"]["color"], "blue", "defaulted");
    let item = u(&format!("{W}/{name}"));
    // Main endpoint: status changes are ignored, metadata-only changes keep the generation.
    let mut upd = obj.clone();
    upd["status"] = json!({"phase": "x"});
    upd["metadata"]["labels"] = json!({"a": "b"});
    let r = call("PUT", &item, Some(&upd)).unwrap().json();
    assert!(r.get("status").is_none());
    assert_eq!(r["metadata"]["generation"], 1);
    assert_eq!(r["metadata"]["labels"]["a"], "b");
    // Spec changes bump it.
    let r = call_with(
        "PATCH",
        &item,
        Some(br#"{"spec":{"size":4}}"#),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap()
    .json();
    assert_eq!(r["metadata"]["generation"], 2);
    // /status changes only status.
    let mut st = r.clone();
    st["status"] = json!({"phase": "Ready"});
    st["spec"]["size"] = json!(9);
    let r = call("PUT", &format!("{item}/status"), Some(&st))
        .unwrap()
        .json();
    assert_eq!(r["status"]["phase"], "Ready");
    assert_eq!(r["spec"]["size"], 4);
    assert_eq!(r["metadata"]["generation"], 2);
    assert_eq!(
        call("GET", &format!("{item}/status"), None).unwrap().json()["status"]["phase"],
        "Ready"
    );
    // dryRun writes nothing.
    let r = call(
        "POST",
        &u(&format!("{W}?dryRun=All")),
        Some(&widget("dry", 1)),
    )
    .unwrap();
    assert_eq!(r.code, 201);
    assert_eq!(
        call("GET", &u(&format!("{W}/dry")), None).unwrap().code,
        404
    );
    let r = call_with(
        "PATCH",
        &u(&format!("{W}/{name}?dryRun=All")),
        Some(br#"{"spec":{"size":5}}"#),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    assert_eq!(r.json()["spec"]["size"], 5);
    assert_eq!(call("GET", &item, None).unwrap().json()["spec"]["size"], 4);
    assert_eq!(
        call("DELETE", &u(&format!("{W}/{name}?dryRun=All")), None)
            .unwrap()
            .code,
        200
    );
    assert_eq!(call("GET", &item, None).unwrap().code, 200);
    // Finalizers: delete marks, removing the last finalizer deletes.
    let mut f = widget("fin", 1);
    f["metadata"]["finalizers"] = json!(["example.com/keep"]);
    assert_eq!(call("POST", &u(W), Some(&f)).unwrap().code, 201);
    let fin = u(&format!("{W}/fin"));
    let r = call("DELETE", &fin, None).unwrap();
    assert_eq!(r.code, 200);
    assert!(
        r.json()["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        r.body
    );
    assert_eq!(call("GET", &fin, None).unwrap().code, 200);
    let r = call_with(
        "PATCH",
        &fin,
        Some(br#"{"metadata":{"finalizers":["example.com/keep","another"]}}"#),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    assert_eq!(r.code, 422, "no new finalizers while deleting: {}", r.body);
    let r = call_with(
        "PATCH",
        &fin,
        Some(br#"[{"op":"remove","path":"/metadata/finalizers"}]"#),
        &[("Content-Type", "application/json-patch+json")],
    )
    .unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(call("GET", &fin, None).unwrap().code, 404);
    // Update of a missing object: 404.
    assert_eq!(
        call("PUT", &u(&format!("{W}/ghost")), Some(&widget("ghost", 1)))
            .unwrap()
            .code,
        404
    );
    // Name mismatch: 400.
    assert_eq!(
        call("PUT", &item, Some(&widget("other", 1))).unwrap().code,
        400
    );
    // deletecollection with a label selector.
    for i in 0..3 {
        let mut w = widget(&format!("c{i}"), 1);
        w["metadata"]["labels"] = json!({"batch": "yes"});
        call("POST", &u(W), Some(&w)).unwrap();
    }
    let r = call(
        "DELETE",
        &u(&format!("{W}?labelSelector=batch%3Dyes")),
        None,
    )
    .unwrap();
    assert_eq!(r.code, 200);
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 3);
    assert_eq!(
        call("GET", &u(&format!("{W}?labelSelector=batch")), None)
            .unwrap()
            .json()["items"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        call("GET", &item, None).unwrap().code,
        200,
        "unselected objects stay"
    );
    // A cluster-wide list across namespaces.
    call(
        "POST",
        &u("/api/v1/namespaces"),
        Some(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})),
    )
    .unwrap();
    call(
        "POST",
        &u("/apis/example.com/v1/namespaces/other/widgets"),
        Some(&widget("elsewhere", 1)),
    )
    .unwrap();
    let all = call("GET", &u("/apis/example.com/v1/widgets"), None)
        .unwrap()
        .json();
    let names: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"elsewhere") && names.contains(&name.as_str()),
        "{names:?}"
    );
    let only = call(
        "GET",
        &u("/apis/example.com/v1/widgets?fieldSelector=metadata.namespace%3Dother"),
        None,
    )
    .unwrap()
    .json();
    assert_eq!(only["items"].as_array().unwrap().len(), 1);
    // Deleting a namespace deletes what is in it.
    assert_eq!(
        call("DELETE", &u("/api/v1/namespaces/other"), None)
            .unwrap()
            .code,
        200
    );
    let gone = u("/apis/example.com/v1/namespaces/other/widgets/elsewhere");
    strategy_host_e2e::eventually(
        "the namespace's objects deleted",
        Duration::from_secs(10),
        || call("GET", &gone, None).unwrap().code == 404,
    );
}

/// B.4: a malformed `DeleteOptions` body answers 400 BadRequest and deletes nothing, for a
/// delete and for a deletecollection.
#[test]
fn malformed_delete_options_delete_nothing() {
    let (host, _dir) = start(&[]);
    let u = |p: &str| host.url(p);
    let mut w = widget("keep", 1);
    w["metadata"]["labels"] = json!({"batch": "b4"});
    assert_eq!(call("POST", &u(W), Some(&w)).unwrap().code, 201);
    let item = u(&format!("{W}/keep"));
    let collection = u(&format!("{W}?labelSelector=batch%3Db4"));
    let bad: [&[u8]; 7] = [
        br#"{"preconditions":"x"}"#,
        br#"{"preconditions":{"uid":5}}"#,
        br#"{"gracePeriodSeconds":"abc"}"#,
        br#"{"propagationPolicy":"Sideways"}"#,
        br#"{"dryRun":"All"}"#,
        br#"{"kind":"Widget","apiVersion":"example.com/v1"}"#,
        b"not json",
    ];
    for body in bad {
        for url in [&item, &collection] {
            let r = call_with("DELETE", url, Some(body), &[]).unwrap();
            assert_status(&r, 400, "BadRequest");
            assert_eq!(
                call("GET", &item, None).unwrap().code,
                200,
                "DELETE {url} with {} deleted the object",
                String::from_utf8_lossy(body)
            );
        }
    }
    // A well-formed body still deletes.
    let r = call_with(
        "DELETE",
        &item,
        Some(br#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}"#),
        &[],
    )
    .unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(call("GET", &item, None).unwrap().code, 404);
}
