//! End-to-end with real clients against the real binary: the built-in kinds (configmaps,
//! secrets, serviceaccounts, events, leases) through kubectl 1.32 (JSON) and kubectl 1.35
//! (Kubernetes protobuf), Helm 4 keeping its release in a Secret, a leader election over a
//! Lease by two clients, and namespace deletion emptying the new kinds.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use strategy_host_e2e::{
    call, eventually, kubectl_path, latest_kubectl_path, HostProcess, KubeFixture,
};

type Kube = KubeFixture;

/// What every kubectl version must be able to do with the built-in kinds.
fn everyday_commands(k: &Kube) {
    assert!(k
        .ok(&["create", "namespace", "team"])
        .contains("namespace/team created"));
    k.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "team",
        "--from-literal=mode=fast",
        "--from-literal=level=3",
    ]);
    k.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "team",
        "--from-literal=user=admin",
    ]);
    k.ok(&["create", "serviceaccount", "runner", "-n", "team"]);

    let mode = k.ok(&[
        "get",
        "configmap",
        "settings",
        "-n",
        "team",
        "-o",
        "jsonpath={.data.mode}",
    ]);
    assert_eq!(mode, "fast");
    // As in Kubernetes, core kinds carry no metadata.generation.
    let generation = k.ok(&[
        "get",
        "configmap",
        "settings",
        "-n",
        "team",
        "-o",
        "jsonpath={.metadata.generation}",
    ]);
    assert_eq!(generation, "");
    // stringData-free secrets keep base64 data; `--from-literal` sends data.
    let user = k.ok(&[
        "get",
        "secret",
        "creds",
        "-n",
        "team",
        "-o",
        "jsonpath={.data.user}",
    ]);
    assert_eq!(user, "YWRtaW4=");
    let secret_type = k.ok(&[
        "get",
        "secret",
        "creds",
        "-n",
        "team",
        "-o",
        "jsonpath={.type}",
    ]);
    assert_eq!(secret_type, "Opaque");
    // Kubernetes' columns: DATA counts entries, SECRETS the listed secrets.
    let row = k.ok(&["get", "configmap", "settings", "-n", "team", "--no-headers"]);
    assert_eq!(
        row.split_whitespace().take(2).collect::<Vec<_>>(),
        ["settings", "2"],
        "{row}"
    );
    let header = k.ok(&["get", "secrets", "-n", "team"]);
    assert!(
        header.starts_with("NAME") && header.contains("TYPE") && header.contains("DATA"),
        "{header}"
    );
    let table = k.ok(&["get", "configmaps,secrets,serviceaccounts", "-n", "team"]);
    for name in [
        "configmap/settings",
        "secret/creds",
        "serviceaccount/runner",
    ] {
        assert!(table.contains(name), "{table}");
    }

    // Kubernetes' validation, from the built-in module.
    let err = k.fails(&[
        "create",
        "secret",
        "generic",
        "tls-ish",
        "-n",
        "team",
        "--type=kubernetes.io/tls",
        "--from-literal=tls.crt=x",
    ]);
    assert!(err.contains("data[tls.key]: Required value"), "{err}");
    k.ok(&["label", "configmap", "settings", "-n", "team", "tier=gold"]);
    k.ok(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        "team",
        "-p",
        r#"{"immutable":true}"#,
    ]);
    let err = k.fails(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        "team",
        "-p",
        r#"{"data":{"mode":"slow"}}"#,
    ]);
    assert!(
        err.contains("field is immutable when `immutable` is set"),
        "{err}"
    );

    // Events: posted by a controller (here over the API), listed by `kubectl events`.
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "settings.1", "namespace": "team"},
        "involvedObject": {"kind": "ConfigMap", "name": "settings", "namespace": "team", "apiVersion": "v1"},
        "reason": "Reloaded", "message": "settings were reloaded", "type": "Normal",
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z", "count": 1,
        "source": {"component": "e2e"},
    });
    let created = call(
        "POST",
        &k.host.url("/api/v1/namespaces/team/events"),
        Some(&event),
    )
    .unwrap();
    assert_eq!(created.code, 201, "{}", created.body);
    let events = k.ok(&["events", "-n", "team"]);
    assert!(
        events.contains("Reloaded") && events.contains("settings were reloaded"),
        "{events}"
    );

    // Deleting the namespace removes its objects of every kind.
    k.ok(&["delete", "namespace", "team", "--timeout=30s"]);
    for path in [
        "/api/v1/namespaces/team/configmaps/settings",
        "/api/v1/namespaces/team/secrets/creds",
        "/api/v1/namespaces/team/serviceaccounts/runner",
        "/api/v1/namespaces/team/events/settings.1",
    ] {
        assert_eq!(k.status(path), 404, "{path} outlived its namespace");
    }
}

#[test]
fn kubectl_1_32_drives_the_built_in_kinds_over_json() {
    everyday_commands(&KubeFixture::start(kubectl_path().unwrap()));
}

#[test]
fn kubectl_1_35_drives_the_built_in_kinds_over_protobuf() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    let version = k.ok(&["version", "--client"]);
    assert!(version.contains("v1.35"), "{version}");
    everyday_commands(&k);
}

fn lease(holder: &str, transitions: i64, renewed_at: u32, rv: Option<&str>) -> serde_json::Value {
    let mut lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "leader", "namespace": "default"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "leaseTransitions": transitions,
                 "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": format!("2026-01-01T00:00:{renewed_at:02}.000000Z")},
    });
    if let Some(rv) = rv {
        lease["metadata"]["resourceVersion"] = json!(rv);
    }
    lease
}

#[test]
fn two_clients_elect_a_leader_over_a_lease_and_a_stale_takeover_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", &data]).unwrap();
    let leases = host.url("/apis/coordination.k8s.io/v1/namespaces/default/leases");
    let leader = format!("{leases}/leader");

    // a acquires; b observes the lease at that version.
    let created = call("POST", &leases, Some(&lease("a", 0, 0, None))).unwrap();
    assert_eq!(created.code, 201, "{}", created.body);
    let seen_by_b = call("GET", &leader, None).unwrap().json();
    let stale_rv = seen_by_b["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    // a renews (a new renewTime), which moves the version on.
    let renewed = call("PUT", &leader, Some(&lease("a", 0, 2, Some(&stale_rv)))).unwrap();
    assert_eq!(renewed.code, 200, "{}", renewed.body);

    // b, believing the lease expired, takes over from what it saw: 409, a stays leader.
    let takeover = call("PUT", &leader, Some(&lease("b", 1, 3, Some(&stale_rv)))).unwrap();
    assert_eq!(takeover.code, 409, "{}", takeover.body);
    assert_eq!(takeover.json()["reason"], "Conflict");
    assert_eq!(
        call("GET", &leader, None).unwrap().json()["spec"]["holderIdentity"],
        "a"
    );

    // From the current version, b's takeover wins.
    let current = call("GET", &leader, None).unwrap().json();
    let rv = current["metadata"]["resourceVersion"].as_str().unwrap();
    let won = call("PUT", &leader, Some(&lease("b", 1, 4, Some(rv)))).unwrap();
    assert_eq!(won.code, 200, "{}", won.body);
    assert_eq!(won.json()["spec"]["leaseTransitions"], 1);

    // Kubernetes' lease validation holds.
    let mut bad = lease("c", -1, 0, None);
    bad["metadata"]["name"] = json!("bad");
    bad["spec"]["leaseDurationSeconds"] = json!(0);
    let refused = call("POST", &leases, Some(&bad)).unwrap();
    assert_eq!(refused.code, 422, "{}", refused.body);
    let causes: Vec<String> = refused.json()["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        causes,
        ["spec.leaseDurationSeconds", "spec.leaseTransitions"]
    );
}

/// Helm with its release records in Secrets (its default driver, named to be sure).
fn helm(host: &HostProcess, home: &Path, args: &[&str]) -> (bool, String) {
    strategy_host_e2e::helm(&host.base_url, home, args, &[("HELM_DRIVER", "secret")]).unwrap()
}

#[test]
fn helm_4_keeps_its_release_in_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", &data]).unwrap();
    let chart = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("charts/hello");
    let chart = chart.display().to_string();
    // Client-side apply here; server_side_apply.rs covers Helm's default (server-side).
    let (ok, out) = helm(
        &host,
        dir.path(),
        &[
            "install",
            "greet",
            &chart,
            "--server-side=false",
            "--wait=false",
        ],
    );
    assert!(ok, "{out}");
    let cm = call(
        "GET",
        &host.url("/api/v1/namespaces/default/configmaps/greet-config"),
        None,
    )
    .unwrap();
    assert_eq!(cm.json()["data"]["greeting"], "hello", "{}", cm.body);
    let secret = call(
        "GET",
        &host.url("/api/v1/namespaces/default/secrets/greet-secret"),
        None,
    )
    .unwrap();
    assert_eq!(
        secret.json()["data"]["token"],
        "aGVsbG8=",
        "stringData folded: {}",
        secret.body
    );

    let releases = call(
        "GET",
        &host.url("/api/v1/namespaces/default/secrets?labelSelector=owner%3Dhelm"),
        None,
    )
    .unwrap();
    let items = releases.json()["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1, "{}", releases.body);
    assert_eq!(items[0]["type"], "helm.sh/release.v1");
    assert_eq!(items[0]["metadata"]["name"], "sh.helm.release.v1.greet.v1");

    let (ok, out) = helm(
        &host,
        dir.path(),
        &[
            "upgrade",
            "greet",
            &chart,
            "--server-side=false",
            "--set",
            "greeting=hi",
        ],
    );
    assert!(ok, "{out}");
    let cm = call(
        "GET",
        &host.url("/api/v1/namespaces/default/configmaps/greet-config"),
        None,
    )
    .unwrap();
    assert_eq!(cm.json()["data"]["greeting"], "hi");
    let (ok, out) = helm(&host, dir.path(), &["list"]);
    assert!(
        ok && out.contains("greet") && out.contains("deployed"),
        "{out}"
    );
    let (ok, out) = helm(&host, dir.path(), &["rollback", "greet", "1"]);
    assert!(ok, "{out}");
    let cm = call(
        "GET",
        &host.url("/api/v1/namespaces/default/configmaps/greet-config"),
        None,
    )
    .unwrap();
    assert_eq!(cm.json()["data"]["greeting"], "hello");
    let (ok, out) = helm(&host, dir.path(), &["uninstall", "greet", "--wait=false"]);
    assert!(ok, "{out}");
    let url = host.url("/api/v1/namespaces/default/configmaps/greet-config");
    eventually(
        "the release's ConfigMap deleted",
        Duration::from_secs(10),
        || call("GET", &url, None).unwrap().code == 404,
    );
}

#[test]
fn events_are_served_in_both_groups_and_expire_after_their_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", &data, "--event-ttl", "3s"]).unwrap();
    let core = host.url("/api/v1/namespaces/default/events");
    let v1 = host.url("/apis/events.k8s.io/v1/namespaces/default/events");

    // What kube-rs's Recorder posts: an events.k8s.io/v1 Event.
    let recorded = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.reconciled", "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "ConfigMap", "name": "web", "namespace": "default", "apiVersion": "v1"},
        "reason": "Reconciled", "note": "all good", "type": "Normal", "action": "Reconcile",
        "reportingController": "example.com/controller", "reportingInstance": "controller-0",
    });
    let created = call("POST", &v1, Some(&recorded)).unwrap();
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(created.json()["note"], "all good");
    // The same stored object, as core v1 serves it.
    let as_core = call("GET", &format!("{core}/web.reconciled"), None)
        .unwrap()
        .json();
    assert_eq!(as_core["apiVersion"], "v1");
    assert_eq!(as_core["message"], "all good");
    assert_eq!(as_core["involvedObject"]["name"], "web");
    assert_eq!(as_core["reportingComponent"], "example.com/controller");
    assert!(as_core.get("note").is_none() && as_core.get("regarding").is_none());
    // And a core event through events.k8s.io.
    let legacy = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.legacy", "namespace": "default"},
        "involvedObject": {"kind": "ConfigMap", "name": "web", "namespace": "default"},
        "reason": "Old", "message": "from a core client", "count": 2,
    });
    assert_eq!(call("POST", &core, Some(&legacy)).unwrap().code, 201);
    let listed = call("GET", &v1, None).unwrap().json();
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{listed}");
    let old = items.iter().find(|e| e["reason"] == "Old").unwrap();
    assert_eq!(
        (old["note"].as_str(), old["deprecatedCount"].as_i64()),
        (Some("from a core client"), Some(2))
    );
    // events.k8s.io requires what Kubernetes requires of it.
    let mut untimed = recorded.clone();
    untimed["metadata"]["name"] = json!("untimed");
    untimed.as_object_mut().unwrap().remove("eventTime");
    let refused = call("POST", &v1, Some(&untimed)).unwrap();
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert_eq!(refused.json()["details"]["causes"][0]["field"], "eventTime");

    // Both expire once their TTL has passed since their last write.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while call("GET", &core, None).unwrap().json()["items"]
        .as_array()
        .is_some_and(|i| !i.is_empty())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "events outlived their TTL"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        call("GET", &format!("{v1}/web.reconciled"), None)
            .unwrap()
            .code,
        404
    );
}
