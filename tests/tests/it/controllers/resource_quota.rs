//! ResourceQuotas as an operator uses them, with kubectl 1.35 against the real binary: the
//! quota controller fills `status.used` (object counts of built-in kinds and of a custom
//! resource), quota admission refuses what would pass a limit in Kubernetes' words and the
//! controller gives usage back when objects go; concurrent creates never together pass a
//! limit; a status rewritten by a client is put back; bad limits are refused.

use std::thread;

use serde_json::{json, Value};
use strategy_host_e2e::{call, eventually, latest_kubectl_path, widget, HostProcess, KubeFixture};

use super::{serve_widgets, WAIT};

const QUOTAS: &str = "/api/v1/namespaces/default/resourcequotas";

fn used(k: &KubeFixture, name: &str) -> Value {
    k.get(&format!("{QUOTAS}/{name}"))["status"]["used"].clone()
}

fn quota(name: &str, hard: Value) -> String {
    json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard}})
        .to_string()
}

fn post(host: &HostProcess, collection: &str, obj: &Value) -> (u16, Value) {
    let reply = call("POST", &host.url(collection), Some(obj)).unwrap();
    (reply.code, reply.json())
}

#[test]
fn quota_counts_refuses_past_its_limits_and_gives_back_what_is_deleted() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    serve_widgets(&k.host);
    let hard = json!({"configmaps": "2", "services": 3, "services.nodeports": "1",
        "services.loadbalancers": "1", "resourcequotas": "1", "count/widgets.example.com": "1",
        "cpu": "1"});
    k.ok_with(&["apply", "-f", "-"], Some(&quota("team", hard)));
    eventually("the controller to count", WAIT, || {
        used(&k, "team")
            == json!({"configmaps": "0", "count/widgets.example.com": "0", "resourcequotas": "1",
                // The `kubernetes` Service is in `default`.
                "services": "1", "services.loadbalancers": "0", "services.nodeports": "0"})
    });
    let status = k.get(&format!("{QUOTAS}/team"))["status"].clone();
    assert_eq!(
        status["hard"]["services"], "3",
        "{status}: numbers stored as quantities"
    );

    k.ok(&["create", "configmap", "a"]);
    k.ok(&["create", "configmap", "b"]);
    let refused = k.fails(&["create", "configmap", "c"]);
    assert!(
        refused.contains(r#"configmaps "c" is forbidden: exceeded quota: team, requested: configmaps=1, used: configmaps=2, limited: configmaps=2"#),
        "{refused}"
    );
    k.ok(&["create", "service", "nodeport", "np", "--tcp=80:80"]);
    let refused = k.fails(&["create", "service", "loadbalancer", "lb", "--tcp=80:80"]);
    assert!(
        refused.contains("exceeded quota: team, requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1"),
        "{refused}"
    );
    // A custom resource is counted as `count/<plural>.<group>`.
    k.ok_with(&["apply", "-f", "-"], Some(&widget("w1", 1).to_string()));
    let (code, body) = post(
        &k.host,
        "/apis/example.com/v1/namespaces/default/widgets",
        &widget("w2", 1),
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        r#"widgets.example.com "w2" is forbidden: exceeded quota: team, requested: count/widgets.example.com=1, used: count/widgets.example.com=1, limited: count/widgets.example.com=1"#
    );
    // A second quota would pass the count of quotas.
    let (code, body) = post(
        &k.host,
        QUOTAS,
        &serde_json::from_str(&quota("more", json!({"pods": "1"}))).unwrap(),
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden", "{body}");
    // A dry run is checked but charges nothing.
    k.ok(&["delete", "configmap", "b"]);
    eventually("the deleted configmap to be given back", WAIT, || {
        used(&k, "team")["configmaps"] == "1"
    });
    k.ok(&["create", "configmap", "dry", "--dry-run=server"]);
    assert_eq!(used(&k, "team")["configmaps"], "1");
    k.ok(&["delete", "service", "np"]);
    eventually("the node port to be given back", WAIT, || {
        used(&k, "team")["services.nodeports"] == "0"
    });
    k.ok(&["create", "service", "loadbalancer", "lb", "--tcp=80:80"]);
    assert_eq!(used(&k, "team")["services.loadbalancers"], "1");

    // Limits that are not quantities, not whole counts or not quota's resources are refused.
    let refused = k.fails(&["create", "quota", "bad", "--hard=pods=1.5,widgets=2,cpu=-1"]);
    for detail in [
        r#"spec.hard[pods]: Invalid value: "1500m": must be an integer"#,
        r#"spec.hard[widgets]: Invalid value: "widgets": must be a standard resource for quota"#,
        r#"spec.hard[cpu]: Invalid value: "-1": must be greater than or equal to 0"#,
    ] {
        assert!(refused.contains(detail), "{detail} in {refused}");
    }
}

#[test]
fn concurrent_creates_never_together_pass_a_limit() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    k.ok_with(
        &["apply", "-f", "-"],
        Some(&quota("five", json!({"configmaps": "5"}))),
    );
    eventually("the controller to count", WAIT, || {
        used(&k, "five")["configmaps"] == "0"
    });
    let url = k.host.url("/api/v1/namespaces/default/configmaps");
    let url = &url;
    let codes: Vec<u16> = thread::scope(|s| {
        let creates: Vec<_> = (0..16)
            .map(|i| {
                s.spawn(move || {
                    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}});
                    call("POST", url, Some(&cm)).unwrap().code
                })
            })
            .collect();
        creates.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 5, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 403).count(), 11, "{codes:?}");
    let listed = k.get("/api/v1/namespaces/default/configmaps")["items"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(listed, 5);
    assert_eq!(used(&k, "five")["configmaps"], "5");
}

#[test]
fn a_status_rewritten_by_a_client_is_put_back_by_the_controller() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    k.ok_with(
        &["apply", "-f", "-"],
        Some(&quota("q", json!({"secrets": "4", "memory": "1Gi"}))),
    );
    eventually("the controller to count", WAIT, || {
        used(&k, "q")["secrets"] == "0"
    });
    let patch = r#"{"status": {"hard": {"secrets": "40"}, "used": {"secrets": "39"}}}"#;
    let out = k.ok(&[
        "patch",
        "quota",
        "q",
        "--subresource=status",
        "--type=merge",
        "-p",
        patch,
        "-o",
        "json",
    ]);
    let patched: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(patched["status"]["hard"]["secrets"], "40", "{patched}");
    assert_eq!(
        patched["spec"]["hard"]["secrets"], "4",
        "{patched}: a status write leaves the spec"
    );
    eventually("the controller to put the status back", WAIT, || {
        let status = k.get(&format!("{QUOTAS}/q"))["status"].clone();
        status == json!({"hard": {"secrets": "4", "memory": "1Gi"}, "used": {"secrets": "0"}})
    });
}
