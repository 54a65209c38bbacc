//! End-to-end over HTTP against the real binary on the embedded store: every error answers a
//! Kubernetes Status with the right code; the registry's system fields, status subresource,
//! finalizers, dry runs and deletecollection (reads — tables, paging, discovery, watches — are
//! in `api_http_reads.rs`; the errors in `api_http/errors.rs`).

use std::time::Duration;

use serde_json::{json, Value};
use strategy_host_e2e::{call, call_with, widget, widget_crd, HostProcess, Reply};

mod errors;

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
