//! End-to-end over HTTP against the real binary on the embedded store: every error answers a
//! Kubernetes Status with the right code; the registry's system fields, status subresource,
//! finalizers, dry runs and deletecollection; paging; discovery, OpenAPI and tables; watches.

use std::time::Duration;

use serde_json::{json, Value};
use strategy_host_e2e::{call, call_with, widget, widget_crd, HostProcess, Reply, WatchReader};

const W: &str = "/apis/example.com/v1/namespaces/default/widgets";

fn start(extra: &[&str]) -> (HostProcess, tempfile::TempDir) {
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

/// B.6: a Table of a real CRD (Gateway API's HTTPRoute, with its own printer columns): `Name`
/// then the declared columns only, and a list value printed as compact JSON.
#[test]
fn tables_print_declared_columns_as_kubernetes() {
    let (host, _dir) = start(&[]);
    let u = |p: &str| host.url(p);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "httproutes.gateway.networking.k8s.io"},
        "spec": {"group": "gateway.networking.k8s.io", "scope": "Namespaced",
                 "names": {"plural": "httproutes", "singular": "httproute", "kind": "HTTPRoute", "listKind": "HTTPRouteList", "categories": ["gateway-api"]},
                 "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                               "additionalPrinterColumns": [
                                   {"name": "Hostnames", "type": "string", "jsonPath": ".spec.hostnames"},
                                   {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                               ],
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let r = call(
        "POST",
        &u("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        Some(&crd),
    )
    .unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    let routes = "/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes";
    let route = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                       "metadata": {"name": "web"},
                       "spec": {"hostnames": ["example.com"], "parentRefs": [{"name": "gw"}]}});
    let r = call("POST", &u(routes), Some(&route)).unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    let t = call_with(
        "GET",
        &u(routes),
        None,
        &[(
            "Accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )],
    )
    .unwrap()
    .json();
    let cols: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, vec!["Name", "Hostnames", "Age"], "{t}");
    let cells = &t["rows"][0]["cells"];
    assert_eq!(cells[0], "web");
    assert_eq!(cells[1], r#"["example.com"]"#, "{t}");
    assert!(cells[2].is_string(), "{t}");
}

#[test]
fn paging_through_a_thousand_objects() {
    let (host, _dir) = start(&[]);
    let base = host.url(W);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let base = base.clone();
            std::thread::spawn(move || {
                for i in (t..1000).step_by(8) {
                    let r = call("POST", &base, Some(&widget(&format!("w{i:04}"), 1))).unwrap();
                    assert_eq!(r.code, 201, "{}", r.body);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut list_rv = None;
    let mut pages = 0;
    loop {
        let url = if token.is_empty() {
            format!("{base}?limit=137")
        } else {
            format!("{base}?limit=137&continue={token}")
        };
        let page = call("GET", &url, None).unwrap();
        assert_eq!(page.code, 200, "{}", page.body);
        let page = page.json();
        pages += 1;
        if pages == 2 {
            // A write between pages does not show: every page is at the first page's revision.
            call("POST", &base, Some(&widget("w9999", 1))).unwrap();
        }
        let rv = page["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(*list_rv.get_or_insert(rv.clone()), rv);
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap().to_string()),
        );
        match page["metadata"]["continue"].as_str() {
            Some(c) if !c.is_empty() => token = c.to_string(),
            _ => break,
        }
    }
    assert_eq!(pages, 8);
    assert_eq!(seen.len(), 1000);
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, seen, "in key order, no duplicates");

    // Whole lists are written item by item in chunks; what arrives is one list all the same,
    // from the cache as it is and consistent.
    for url in [format!("{base}?resourceVersion=0"), base.clone()] {
        let list = call("GET", &url, None).unwrap();
        assert_eq!(list.code, 200, "{}", list.body);
        assert!(list.body.len() > 256 * 1024, "a list of several chunks");
        let list = list.json();
        assert_eq!(list["kind"], "WidgetList");
        assert_eq!(list["apiVersion"], "example.com/v1");
        assert!(
            list["metadata"]["continue"].is_null(),
            "{}",
            list["metadata"]
        );
        let names: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 1001, "{url}");
        assert_eq!(names[..1000], seen[..], "{url}");
        assert_eq!(names[1000], "w9999");
        let first = &list["items"][0];
        assert_eq!(first["kind"], "Widget");
        assert!(first["metadata"]["resourceVersion"].as_str().is_some());
    }
}

#[test]
fn discovery_openapi_and_tables_follow_definitions() {
    let (host, _dir) = start(&[]);
    let u = |p: &str| host.url(p);
    let groups = call("GET", &u("/apis"), None).unwrap().json();
    assert!(groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["name"] == "example.com"));
    // kubectl's Accept header gets aggregated discovery (tests/discovery.rs covers it);
    // the plain documents stay for clients that list plain JSON first.
    let r = call_with(
        "GET",
        &u("/apis"),
        None,
        &[(
            "Accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )],
    )
    .unwrap();
    assert_eq!(r.json()["kind"], "APIGroupDiscoveryList");
    let r = call_with(
        "GET",
        &u("/apis"),
        None,
        &[(
            "Accept",
            "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )],
    )
    .unwrap();
    assert_eq!(r.json()["kind"], "APIGroupList");
    assert_eq!(
        call("GET", &u("/api"), None).unwrap().json()["versions"][0],
        "v1"
    );
    let list = call("GET", &u("/apis/example.com/v1"), None)
        .unwrap()
        .json();
    let res = &list["resources"][0];
    assert_eq!(
        (
            res["name"].as_str(),
            res["kind"].as_str(),
            res["namespaced"].as_bool()
        ),
        (Some("widgets"), Some("Widget"), Some(true))
    );
    assert_eq!(res["shortNames"][0], "wd");
    assert_eq!(res["singularName"], "widget");
    assert!(res["verbs"].as_array().unwrap().contains(&json!("watch")));
    assert_eq!(list["resources"][1]["name"], "widgets/status");
    let core = call("GET", &u("/api/v1"), None).unwrap().json();
    let core_names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for builtin in [
        "configmaps",
        "events",
        "namespaces",
        "secrets",
        "serviceaccounts",
    ] {
        assert!(core_names.contains(&builtin), "{core_names:?}");
    }
    // OpenAPI v3 has the resource with its GVK and advertises fieldValidation on PATCH.
    let index = call("GET", &u("/openapi/v3"), None).unwrap().json();
    let gv_url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    let doc = call("GET", &u(&gv_url), None).unwrap().json();
    let schema = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"][0]["kind"],
        "Widget"
    );
    assert_eq!(
        schema["properties"]["spec"]["properties"]["size"]["type"],
        "integer"
    );
    let patch =
        &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
    assert!(patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "fieldValidation"));
    let v2 = call("GET", &u("/openapi/v2"), None).unwrap().json();
    assert!(v2["definitions"]["com.example.v1.Widget"].is_object());
    // Tables.
    call("POST", &u(W), Some(&widget("t", 3))).unwrap();
    let t = call_with(
        "GET",
        &u(W),
        None,
        &[(
            "Accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )],
    )
    .unwrap()
    .json();
    assert_eq!(t["kind"], "Table");
    let cols: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // The CRD declares its columns, so Kubernetes adds no Age column.
    assert_eq!(cols, vec!["Name", "Size"]);
    assert_eq!(t["rows"][0]["cells"][0], "t");
    assert_eq!(t["rows"][0]["cells"][1], 3);
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    // A second definition is served at once and leaves discovery when deleted.
    let mut gadgets = widget_crd();
    gadgets["metadata"]["name"] = json!("gadgets.tools.example.org");
    gadgets["spec"]["group"] = json!("tools.example.org");
    gadgets["spec"]["scope"] = json!("Cluster");
    gadgets["spec"]["names"] = json!({"plural": "gadgets", "kind": "Gadget"});
    let crd = call(
        "POST",
        &u("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        Some(&gadgets),
    )
    .unwrap()
    .json();
    let conditions = crd["status"]["conditions"].as_array().unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True"),
        "{crd}"
    );
    let mut g = widget("g1", 1);
    g["apiVersion"] = json!("tools.example.org/v1");
    g["kind"] = json!("Gadget");
    let r = call("POST", &u("/apis/tools.example.org/v1/gadgets"), Some(&g)).unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.json()["metadata"].get("namespace").is_none());
    assert!(
        call("GET", &u("/apis/tools.example.org/v1"), None)
            .unwrap()
            .code
            == 200
    );
    assert_eq!(
        call(
            "DELETE",
            &u("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.tools.example.org"),
            None
        )
        .unwrap()
        .code,
        200
    );
    assert_eq!(
        call("GET", &u("/apis/tools.example.org/v1"), None)
            .unwrap()
            .code,
        404
    );
    assert_eq!(
        call("GET", &u("/apis/tools.example.org/v1/gadgets"), None)
            .unwrap()
            .code,
        404
    );
    assert!(!call("GET", &u("/apis"), None)
        .unwrap()
        .body
        .contains("tools.example.org"));
}

#[test]
fn watches_stream_events_bookmarks_and_end_on_timeout() {
    let (host, _dir) = start(&[]);
    let u = |p: &str| host.url(p);
    let list = call("GET", &u(W), None).unwrap().json();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let watch = WatchReader::open(&u(&format!(
        "{W}?watch=true&resourceVersion={rv}&timeoutSeconds=3"
    )))
    .unwrap();
    let legacy = WatchReader::open(&u(&format!(
        "/apis/example.com/v1/watch/namespaces/default/widgets/one?resourceVersion={rv}"
    )))
    .unwrap();
    call("POST", &u(W), Some(&widget("one", 1))).unwrap();
    call("POST", &u(W), Some(&widget("two", 1))).unwrap();
    call_with(
        "PATCH",
        &u(&format!("{W}/one")),
        Some(br#"{"spec":{"size":2}}"#),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    call("DELETE", &u(&format!("{W}/one")), None).unwrap();
    let mut got = Vec::new();
    for _ in 0..4 {
        let e = watch.next(Duration::from_secs(5)).expect("an event");
        assert_eq!(e["object"]["apiVersion"], "example.com/v1");
        got.push(format!(
            "{} {}",
            e["type"].as_str().unwrap(),
            e["object"]["metadata"]["name"].as_str().unwrap()
        ));
    }
    assert_eq!(
        got,
        vec!["ADDED one", "ADDED two", "MODIFIED one", "DELETED one"]
    );
    assert!(
        watch.ended(Duration::from_secs(6)),
        "the stream ends at timeoutSeconds"
    );
    let types: Vec<String> = (0..3)
        .filter_map(|_| legacy.next(Duration::from_secs(5)))
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        types,
        vec!["ADDED", "MODIFIED", "DELETED"],
        "the single-object watch sees only `one`"
    );
    // sendInitialEvents: current state, then a BOOKMARK marking the end of it.
    let w = WatchReader::open(&u(&format!("{W}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=5"))).unwrap();
    let first = w.next(Duration::from_secs(5)).unwrap();
    assert_eq!(
        (
            first["type"].as_str(),
            first["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("two"))
    );
    let mark = w.next(Duration::from_secs(5)).unwrap();
    assert_eq!(mark["type"], "BOOKMARK");
    assert_eq!(
        mark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(mark["object"]["kind"], "Widget");
    assert!(mark["object"].get("spec").is_none());
}
