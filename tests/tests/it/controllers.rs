//! The controllers as operators meet them, with kubectl 1.35 against the real binary: cascading
//! deletes through `ownerReferences` (background, foreground with a blocking dependent held by a
//! finalizer, orphan), collection of what an owner left while the collector was off, namespace
//! termination held by a custom resource's finalizer, Events found by `kubectl describe`, and
//! collection moving to the other host when the controllers' leader dies (3-member etcd). The
//! controllers on a secure server, ResourceQuotas and a kopf operator have their own files.

use std::time::Duration;

use serde_json::{json, Value};
use strategy_host::storage::etcd3::testing::EtcdCluster;
use strategy_host_e2e::{
    call, call_with, eventually, latest_kubectl_path, widget, widget_crd, HostProcess, KubeFixture,
};

mod kopf_operator;
mod resource_quota;
mod secure_server;

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const WAIT: Duration = Duration::from_secs(20);

fn kube() -> KubeFixture {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    serve_widgets(&k.host);
    k
}

fn serve_widgets(host: &HostProcess) {
    let crds = host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    let reply = call("POST", &crds, Some(&widget_crd())).unwrap();
    assert_eq!(reply.code, 201, "{}", reply.body);
}

/// A reference to `owner` (as the server returned it).
fn owned_by(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"],
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    })
}

/// Creates `obj` in `collection`, owned by `owners`; answers it as stored.
fn create(host: &HostProcess, collection: &str, mut obj: Value, owners: &[Value]) -> Value {
    if !owners.is_empty() {
        obj["metadata"]["ownerReferences"] = json!(owners);
    }
    let reply = call("POST", &host.url(collection), Some(&obj)).unwrap();
    assert_eq!(reply.code, 201, "{}", reply.body);
    reply.json()
}

/// Merge-patches the finalizers of the object at `path` to `finalizers`.
fn set_finalizers(host: &HostProcess, path: &str, finalizers: Value) {
    let patch = json!({"metadata": {"finalizers": finalizers}}).to_string();
    let reply = call_with(
        "PATCH",
        &host.url(path),
        Some(patch.as_bytes()),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    assert_eq!(reply.code, 200, "{}", reply.body);
}

fn exists(host: &HostProcess, path: &str) -> bool {
    call("GET", &host.url(path), None).unwrap().code == 200
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

/// root ← mid (blocking) ← leaf, and root ← a ConfigMap: three levels over two resources.
fn owner_chain(host: &HostProcess, prefix: &str) -> [String; 4] {
    let root = create(host, WIDGETS, widget(&format!("{prefix}-root"), 1), &[]);
    let mid = create(
        host,
        WIDGETS,
        widget(&format!("{prefix}-mid"), 2),
        &[owned_by(&root, true)],
    );
    create(
        host,
        WIDGETS,
        widget(&format!("{prefix}-leaf"), 3),
        &[owned_by(&mid, false)],
    );
    create(
        host,
        CONFIGMAPS,
        configmap(&format!("{prefix}-cm")),
        &[owned_by(&root, false)],
    );
    [
        format!("{WIDGETS}/{prefix}-root"),
        format!("{WIDGETS}/{prefix}-mid"),
        format!("{WIDGETS}/{prefix}-leaf"),
        format!("{CONFIGMAPS}/{prefix}-cm"),
    ]
}

#[test]
fn kubectl_cascades_background_foreground_and_orphan_through_owner_chains() {
    let k = kube();
    let host = &k.host;

    // Background: the owner goes at once, its dependents after it, level by level.
    let [root, mid, leaf, cm] = owner_chain(host, "bg");
    k.ok(&["delete", "widget", "bg-root", "--cascade=background"]);
    assert!(!exists(host, &root));
    eventually("the background owner's dependents to go", WAIT, || {
        !exists(host, &mid) && !exists(host, &leaf) && !exists(host, &cm)
    });
    let metrics = call("GET", &host.url("/metrics"), None).unwrap().body;
    let deletions: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("garbagecollector_deletions_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no garbagecollector_deletions_total in {metrics}"));
    assert!(deletions >= 3.0, "{deletions}");

    // Foreground: the owner waits, marked, while a blocking dependent is held by a finalizer.
    let [root, mid, leaf, cm] = owner_chain(host, "fg");
    set_finalizers(host, &mid, json!(["example.com/hold"]));
    k.ok(&[
        "delete",
        "widget",
        "fg-root",
        "--cascade=foreground",
        "--wait=false",
    ]);
    eventually(
        "the foreground dependents that do not block to go",
        WAIT,
        || !exists(host, &leaf) && !exists(host, &cm),
    );
    let owner = k.get(&root);
    assert!(
        owner["metadata"]["deletionTimestamp"].is_string(),
        "{owner}"
    );
    assert_eq!(
        owner["metadata"]["finalizers"],
        json!(["foregroundDeletion"]),
        "{owner}"
    );
    let dependent = k.get(&mid);
    assert!(
        dependent["metadata"]["deletionTimestamp"].is_string(),
        "{dependent}"
    );
    set_finalizers(host, &mid, Value::Null);
    eventually(
        "the foreground owner to go after its blocking dependent",
        WAIT,
        || !exists(host, &mid) && !exists(host, &root),
    );

    // Orphan: the owner goes, its dependents stay and no longer point at it.
    let [root, mid, leaf, cm] = owner_chain(host, "or");
    k.ok(&["delete", "widget", "or-root", "--cascade=orphan"]);
    eventually("the orphaning owner to go", WAIT, || !exists(host, &root));
    for path in [&mid, &cm] {
        let orphan = k.get(path);
        assert!(orphan["metadata"]["ownerReferences"].is_null(), "{orphan}");
    }
    let leaf = k.get(&leaf);
    assert_eq!(
        leaf["metadata"]["ownerReferences"][0]["name"], "or-mid",
        "{leaf}"
    );
}

#[test]
fn a_cycle_of_blocking_owners_and_an_owner_in_another_namespace_end_as_kubernetes_ends_them() {
    let k = kube();
    let host = &k.host;
    // a ⇄ b, each blocking the other's foreground deletion.
    let a = create(host, WIDGETS, widget("cycle-a", 1), &[]);
    let b = create(host, WIDGETS, widget("cycle-b", 1), &[owned_by(&a, true)]);
    let mut a_owned = a.clone();
    a_owned["metadata"]["ownerReferences"] = json!([owned_by(&b, true)]);
    let put = call(
        "PUT",
        &host.url(&format!("{WIDGETS}/cycle-a")),
        Some(&a_owned),
    )
    .unwrap();
    assert_eq!(put.code, 200, "{}", put.body);
    k.ok(&[
        "delete",
        "widget",
        "cycle-a",
        "--cascade=foreground",
        "--wait=false",
    ]);
    eventually("both links of the cycle to go", WAIT, || {
        !exists(host, &format!("{WIDGETS}/cycle-a")) && !exists(host, &format!("{WIDGETS}/cycle-b"))
    });

    // A namespaced owner is looked for in its dependent's namespace only.
    k.ok(&["create", "namespace", "elsewhere"]);
    let owner = create(host, WIDGETS, widget("far-owner", 1), &[]);
    let stray = "/api/v1/namespaces/elsewhere/configmaps";
    create(host, stray, configmap("stray"), &[owned_by(&owner, false)]);
    eventually(
        "the dependent whose owner is in another namespace to go",
        WAIT,
        || !exists(host, &format!("{stray}/stray")),
    );
    let events = k
        .get("/api/v1/namespaces/elsewhere/events?fieldSelector=reason%3DOwnerRefInvalidNamespace");
    let event = &events["items"][0];
    assert_eq!(event["type"], "Warning", "{events}");
    assert_eq!(event["involvedObject"]["name"], "stray", "{events}");
    assert!(exists(host, &format!("{WIDGETS}/far-owner")));
}

#[test]
fn dependents_left_while_the_collector_was_off_are_collected_when_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let mut host =
        HostProcess::start(&["--data-dir", &data, "--controllers=*,-garbagecollector"]).unwrap();
    serve_widgets(&host);
    let owner = create(&host, WIDGETS, widget("parent", 1), &[]);
    create(
        &host,
        CONFIGMAPS,
        configmap("child"),
        &[owned_by(&owner, false)],
    );
    let survivor = create(&host, WIDGETS, widget("other", 1), &[]);
    create(
        &host,
        CONFIGMAPS,
        configmap("kept"),
        &[owned_by(&survivor, false)],
    );
    let deleted = call("DELETE", &host.url(&format!("{WIDGETS}/parent")), None).unwrap();
    assert_eq!(deleted.code, 200, "{}", deleted.body);
    assert!(
        exists(&host, &format!("{CONFIGMAPS}/child")),
        "nothing collects yet"
    );
    host.terminate().unwrap();
    drop(host);

    let host = HostProcess::start(&["--data-dir", &data]).unwrap();
    eventually(
        "the orphaned child to be collected after restart",
        WAIT,
        || !exists(&host, &format!("{CONFIGMAPS}/child")),
    );
    assert!(
        exists(&host, &format!("{CONFIGMAPS}/kept")),
        "a child with its owner stays"
    );
}

#[test]
fn a_namespace_terminates_through_its_contents_finalizers() {
    let k = kube();
    let host = &k.host;
    k.ok(&["create", "namespace", "doomed"]);
    let ns = k.get("/api/v1/namespaces/doomed");
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "doomed",
        "{ns}"
    );
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]), "{ns}");
    let widgets = "/apis/example.com/v1/namespaces/doomed/widgets";
    let mut held = widget("held", 1);
    held["metadata"]["finalizers"] = json!(["example.com/keep"]);
    create(host, widgets, held, &[]);
    create(
        host,
        "/api/v1/namespaces/doomed/configmaps",
        configmap("plain"),
        &[],
    );

    let refused = k.fails(&["delete", "namespace", "default"]);
    assert!(
        refused.contains("namespaces \"default\" is forbidden: this namespace may not be deleted"),
        "{refused}"
    );
    k.ok(&["delete", "namespace", "doomed", "--wait=false"]);
    eventually(
        "the namespace to report the finalizer holding it",
        WAIT,
        || {
            let ns = k.get("/api/v1/namespaces/doomed");
            let conditions = ns["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            ns["status"]["phase"] == "Terminating"
            && conditions.iter().any(|c| {
                c["type"] == "NamespaceFinalizersRemaining"
                    && c["status"] == "True"
                    && c["message"] == "Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances"
            })
        },
    );
    assert!(!exists(host, "/api/v1/namespaces/doomed/configmaps/plain"));
    let (ok, _, err) = k.run_with(
        &["create", "-n", "doomed", "-f", "-"],
        Some("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"late\"}}"),
    );
    assert!(!ok);
    assert!(
        err.contains(
            "unable to create new content in namespace doomed because it is being terminated"
        ),
        "{err}"
    );
    let again = k.fails(&["delete", "namespace", "doomed", "--wait=false"]);
    assert!(
        again.contains("The system is ensuring all content is removed from this namespace"),
        "{again}"
    );

    set_finalizers(host, &format!("{widgets}/held"), Value::Null);
    eventually("the namespace to go once empty", WAIT, || {
        !exists(host, "/api/v1/namespaces/doomed")
    });
}

#[test]
fn kubectl_describe_finds_an_objects_events() {
    let k = kube();
    let host = &k.host;
    let owner = create(host, WIDGETS, widget("described", 1), &[]);
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "described.1"},
        "involvedObject": {"apiVersion": "example.com/v1", "kind": "Widget", "name": "described", "namespace": "default", "uid": owner["metadata"]["uid"]},
        "reason": "Reconciled", "message": "children are in place", "type": "Normal",
        "source": {"component": "widget-operator"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z", "count": 1,
    });
    create(host, "/api/v1/namespaces/default/events", event, &[]);
    let other = json!({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "other.1"},
        "involvedObject": {"kind": "Widget", "name": "someone-else", "namespace": "default"},
        "reason": "Elsewhere", "message": "not this one", "type": "Warning",
    });
    create(host, "/api/v1/namespaces/default/events", other, &[]);
    let described = k.ok(&["describe", "widget", "described"]);
    assert!(described.contains("Reconciled"), "{described}");
    assert!(described.contains("children are in place"), "{described}");
    assert!(!described.contains("Elsewhere"), "{described}");
    let selected = k.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=someone-else,type=Warning",
        "-o",
        "name",
    ]);
    assert_eq!(selected.trim(), "event/other.1");
    let v1 = k.get(
        "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Ddescribed",
    );
    let names: Vec<_> = v1["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["metadata"]["name"].clone())
        .collect();
    assert_eq!(names, [json!("described.1")], "{v1}");
}

#[test]
fn collection_moves_to_the_other_host_when_the_leader_dies() {
    let cluster = EtcdCluster::start(3).unwrap();
    let endpoints = cluster.endpoints().join(",");
    let args = [
        "--etcd-servers",
        &endpoints,
        "--etcd-prefix",
        "/elect",
        "--leader-elect-lease-duration=2s",
        "--leader-elect-renew-deadline=1s",
        "--leader-elect-retry-period=200ms",
    ];
    let mut first = HostProcess::start(&args).unwrap();
    let mut second = HostProcess::start(&args).unwrap();
    let lease = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/strategy-host-controller-manager";
    let holder = |host: &HostProcess| -> String {
        let reply = call("GET", &host.url(lease), None).unwrap();
        reply.json()["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    eventually("a host to take the controllers' lease", WAIT, || {
        !holder(&second).is_empty()
    });
    let leader_identity = holder(&second);
    let first_leads = first.log_text().contains(&leader_identity);
    assert!(
        first_leads || second.log_text().contains(&leader_identity),
        "neither host logged the holder {leader_identity}"
    );
    let (leader, mut follower) = if first_leads {
        (first, second)
    } else {
        (second, first)
    };
    assert!(
        !follower
            .log_text()
            .contains("became the controllers' leader"),
        "one host runs the controllers at a time"
    );
    serve_widgets(&follower);
    let owner = create(&follower, WIDGETS, widget("elected-owner", 1), &[]);
    create(
        &follower,
        CONFIGMAPS,
        configmap("elected-child"),
        &[owned_by(&owner, false)],
    );
    drop(leader); // killed: its lease is never released
    let deleted = call(
        "DELETE",
        &follower.url(&format!("{WIDGETS}/elected-owner")),
        None,
    )
    .unwrap();
    assert_eq!(deleted.code, 200, "{}", deleted.body);
    eventually("the surviving host to collect the child", WAIT, || {
        !exists(&follower, &format!("{CONFIGMAPS}/elected-child"))
    });
    let new_holder = holder(&follower);
    assert_ne!(new_holder, leader_identity);
    assert!(follower.log_text().contains(&new_holder));
}
