//! A custom resource served at several versions through a conversion webhook, with Cluster API's
//! real MachineDeployment CRD (v1beta1, deprecated, and v1beta2, stored; kept as test data) and
//! a conversion webhook written for the test (`tests/python/webhook.py`, `/convert`): objects
//! written at one version and read, patched, applied, listed and watched at the other;
//! `kubectl scale`; the deprecation warning; a failing and a dead webhook answering as
//! Kubernetes answers while nothing stored is lost; a wasm module taking over the conversion
//! mid-watch, and a lossy version of it refused by the round-trip check.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use strategy_host_e2e::webhook_server::{certificates, WebhookServer};
use strategy_host_e2e::{call, eventually, latest_kubectl_path, KubeFixture, WatchReader};

const GROUP: &str = "cluster.x-k8s.io";

/// The namespaced collection of MachineDeployments at `version`.
fn mds(version: &str) -> String {
    format!("/apis/{GROUP}/{version}/namespaces/default/machinedeployments")
}

/// A v1beta1 MachineDeployment: v1beta1's references carry `apiVersion` (v1beta2's
/// `apiGroup`), and its `minReadySeconds` sits in the spec (v1beta2's in the machine template).
fn md_v1beta1(name: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1beta1"), "kind": "MachineDeployment",
        "metadata": {"name": name, "labels": {"fleet": "blue"}},
        "spec": {"clusterName": "c1", "replicas": 1, "minReadySeconds": 5,
                 "selector": {"matchLabels": {"md": name}},
                 "template": {"metadata": {"labels": {"md": name}}, "spec": {
                     "clusterName": "c1", "version": "v1.31.0",
                     "bootstrap": {"configRef": {"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1",
                                                 "kind": "KubeadmConfigTemplate", "name": "boot"}},
                     "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                           "kind": "DockerMachineTemplate", "name": "infra"}}}}
    })
}

/// The server with the CRD installed and its conversion pointed at the test webhook's `path`.
struct Fixture {
    kube: KubeFixture,
    webhook: WebhookServer,
    ca: String,
}

impl Fixture {
    fn start() -> Self {
        Self::start_with(&[])
    }

    /// [`Self::start`] with more server flags.
    fn start_with(args: &[&str]) -> Self {
        let kube = KubeFixture::start_with(latest_kubectl_path().unwrap(), args);
        let ca = certificates(kube.dir.path());
        let webhook = WebhookServer::start(kube.dir.path());
        let crd = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("data/crds/cluster-api/cluster.x-k8s.io_machinedeployments.yaml");
        kube.ok(&["apply", "--server-side", "-f", &crd.display().to_string()]);
        let f = Self { kube, webhook, ca };
        f.convert_through("/convert");
        for version in ["v1beta1", "v1beta2"] {
            eventually(
                &format!("{version} served"),
                Duration::from_secs(10),
                || f.kube.status(&mds(version)) == 200,
            );
        }
        f
    }

    /// Points the CRD's conversion webhook at `path` (as Cluster API's kustomize patch does, with
    /// a URL instead of a Service).
    fn convert_through(&self, path: &str) {
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&self.ca);
        let patch = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": self.webhook.url(path), "caBundle": ca_bundle}}}}});
        self.kube.ok(&[
            "patch",
            "crd",
            "machinedeployments.cluster.x-k8s.io",
            "--type=merge",
            "-p",
            &patch.to_string(),
        ]);
    }

    fn url(&self, path: &str) -> String {
        self.kube.host.url(path)
    }

    fn get(&self, version: &str, name: &str) -> strategy_host_e2e::Reply {
        call("GET", &self.url(&format!("{}/{name}", mds(version))), None).unwrap()
    }

    /// A watch at `version` from the resourceVersion of `list`.
    fn watch(&self, version: &str, list: &Value) -> WatchReader {
        let rv = list["metadata"]["resourceVersion"].as_str().unwrap();
        let url = self.url(&format!("{}?watch=1&resourceVersion={rv}", mds(version)));
        WatchReader::open(&url).unwrap()
    }

    /// How many objects the webhook has converted.
    fn conversions(&self) -> u64 {
        self.webhook.stats()["conversions"].as_u64().unwrap()
    }
}

#[test]
fn machine_deployments_are_served_at_both_versions_through_a_conversion_webhook() {
    let f = Fixture::start();
    // Written at v1beta1, stored at v1beta2, answered at v1beta1.
    let created = call("POST", &f.url(&mds("v1beta1")), Some(&md_v1beta1("a"))).unwrap();
    assert_eq!(created.code, 201, "{}", created.body);
    let created = created.json();
    assert_eq!(created["apiVersion"], "cluster.x-k8s.io/v1beta1");
    assert_eq!(created["spec"]["minReadySeconds"], 5);
    assert!(f.conversions() >= 2, "one conversion each way");

    // Read at v1beta2: the webhook's conversion, the same object.
    let v2 = f.get("v1beta2", "a").json();
    assert_eq!(v2["apiVersion"], "cluster.x-k8s.io/v1beta2");
    let machine = &v2["spec"]["template"]["spec"];
    assert_eq!(
        machine["infrastructureRef"],
        json!({"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": "infra"})
    );
    assert_eq!(machine["minReadySeconds"], 5);
    assert!(v2["spec"].get("minReadySeconds").is_none(), "{v2}");
    assert_eq!(v2["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(
        v2["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    // And back at v1beta1, as written.
    let v1 = f.get("v1beta1", "a").json();
    assert_eq!(v1["spec"]["template"], md_v1beta1("a")["spec"]["template"]);

    // The deprecated version says so, with the version to use instead.
    let (ok, _, stderr) = f
        .kube
        .run(&["get", "machinedeployments.v1beta1.cluster.x-k8s.io", "a"]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("cluster.x-k8s.io/v1beta1 MachineDeployment is deprecated; use cluster.x-k8s.io/v1beta2 MachineDeployment"),
        "{stderr}"
    );

    // Patched at v1beta1, seen at v1beta2.
    f.kube.ok(&[
        "patch",
        "machinedeployments.v1beta1.cluster.x-k8s.io",
        "a",
        "--type=merge",
        "-p",
        r#"{"spec":{"minReadySeconds":9}}"#,
    ]);
    assert_eq!(
        f.get("v1beta2", "a").json()["spec"]["template"]["spec"]["minReadySeconds"],
        9
    );

    // Applied at v1beta1: the managed fields record the version the manager wrote.
    let applied = md_v1beta1("b");
    f.kube.ok_with(
        &[
            "apply",
            "--server-side",
            "--field-manager=fleet-tool",
            "-f",
            "-",
        ],
        Some(&applied.to_string()),
    );
    let b = f.get("v1beta2", "b").json();
    let managers = b["metadata"]["managedFields"].as_array().unwrap();
    let entry = managers
        .iter()
        .find(|m| m["manager"] == "fleet-tool")
        .unwrap_or_else(|| panic!("{managers:?}"));
    assert_eq!(entry["apiVersion"], "cluster.x-k8s.io/v1beta1");
    assert_eq!(entry["operation"], "Apply");

    // A list converts its page in one call.
    let (requests, conversions) = (
        f.webhook.stats()["requests"].as_u64().unwrap(),
        f.conversions(),
    );
    let list = call("GET", &f.url(&mds("v1beta1")), None).unwrap().json();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert!(items
        .iter()
        .all(|i| i["apiVersion"] == "cluster.x-k8s.io/v1beta1"));
    assert_eq!(
        f.webhook.stats()["requests"].as_u64().unwrap(),
        requests + 1
    );
    assert_eq!(f.conversions(), conversions + 2);

    // Each watcher gets events at the version it asked for.
    let (old_watch, new_watch) = (f.watch("v1beta1", &list), f.watch("v1beta2", &list));
    let mut c = md_v1beta1("c");
    c["spec"]["minReadySeconds"] = json!(7);
    assert_eq!(
        call("POST", &f.url(&mds("v1beta1")), Some(&c))
            .unwrap()
            .code,
        201
    );
    let seen_old = old_watch
        .next(Duration::from_secs(10))
        .expect("an event at v1beta1");
    let seen_new = new_watch
        .next(Duration::from_secs(10))
        .expect("an event at v1beta2");
    assert_eq!(seen_old["type"], "ADDED");
    assert_eq!(seen_old["object"]["apiVersion"], "cluster.x-k8s.io/v1beta1");
    assert_eq!(seen_old["object"]["spec"]["minReadySeconds"], 7);
    assert_eq!(seen_new["object"]["apiVersion"], "cluster.x-k8s.io/v1beta2");
    assert_eq!(
        seen_new["object"]["spec"]["template"]["spec"]["minReadySeconds"],
        7
    );

    // kubectl scale through the scale subresource both versions declare.
    f.kube
        .ok(&["scale", "machinedeployment", "a", "--replicas=3"]);
    assert_eq!(f.get("v1beta1", "a").json()["spec"]["replicas"], 3);
}

#[test]
fn a_failing_conversion_answers_as_kubernetes_does_and_loses_nothing() {
    let mut f = Fixture::start();
    assert_eq!(
        call("POST", &f.url(&mds("v1beta1")), Some(&md_v1beta1("a")))
            .unwrap()
            .code,
        201
    );
    f.convert_through("/convert-fail");
    let mut failed = None;
    eventually(
        "the failing converter in use",
        Duration::from_secs(10),
        || {
            let reply = f.get("v1beta1", "a");
            let done = reply.code == 500;
            failed = Some(reply);
            done
        },
    );
    let failed = failed.unwrap().json();
    assert_eq!(failed["reason"], "InternalError");
    assert!(
        failed["message"].as_str().unwrap().contains(
            "conversion webhook for cluster.x-k8s.io/v1beta2, Kind=MachineDeployment returned failure: this converter is broken"
        ),
        "{failed}"
    );
    // A write at the other version is refused whole: nothing half-stored.
    let refused = call("POST", &f.url(&mds("v1beta1")), Some(&md_v1beta1("b"))).unwrap();
    assert_eq!(refused.code, 500, "{}", refused.body);
    // The stored version needs no conversion: it is served, and the object is intact.
    let stored = f.get("v1beta2", "a");
    assert_eq!(stored.code, 200);
    assert_eq!(
        stored.json()["spec"]["template"]["spec"]["minReadySeconds"],
        5
    );
    assert_eq!(f.get("v1beta2", "b").code, 404);

    // A webhook that is down: Go's words for the failed call.
    f.convert_through("/convert");
    eventually("the converter back", Duration::from_secs(10), || {
        f.get("v1beta1", "a").code == 200
    });
    f.webhook.kill();
    let down = f.get("v1beta1", "a");
    assert_eq!(down.code, 500, "{}", down.body);
    let message = down.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("conversion webhook for cluster.x-k8s.io/v1beta2, Kind=MachineDeployment failed: Post \"https://127.0.0.1:"),
        "{message}"
    );
    assert_eq!(f.get("v1beta2", "a").code, 200);
}

const MODULES: &str = "/apis/strategyhost.io/v1alpha1/strategymodules";

/// The StrategyModule binding the `.wasm` at `path` to MachineDeployments.
fn conversion_module(path: &str) -> Value {
    let bytes = base64::engine::general_purpose::STANDARD.encode(std::fs::read(path).unwrap());
    json!({"apiVersion": "strategyhost.io/v1alpha1", "kind": "StrategyModule",
           "metadata": {"name": "md-conversion"},
           "spec": {"resource": {"group": GROUP, "kind": "MachineDeployment"}, "module": bytes}})
}

#[test]
fn a_wasm_module_takes_over_conversion_mid_watch_and_a_lossy_version_is_refused() {
    let mut f = Fixture::start();
    for name in ["a", "b"] {
        assert_eq!(
            call("POST", &f.url(&mds("v1beta1")), Some(&md_v1beta1(name)))
                .unwrap()
                .code,
            201
        );
    }
    let list = call("GET", &f.url(&mds("v1beta2")), None).unwrap().json();
    let (old_watch, new_watch) = (f.watch("v1beta1", &list), f.watch("v1beta2", &list));
    assert_eq!(
        call("POST", &f.url(&mds("v1beta1")), Some(&md_v1beta1("before")))
            .unwrap()
            .code,
        201
    );

    // The module takes over from the webhook, which then goes away.
    let module = conversion_module(strategy_artifacts::MACHINEDEPLOYMENT_CONVERSION);
    assert_eq!(
        call("POST", &f.url(MODULES), Some(&module)).unwrap().code,
        201
    );
    eventually(
        "the conversion module active",
        Duration::from_secs(20),
        || f.kube.get(&format!("{MODULES}/md-conversion"))["status"]["phase"] == "Active",
    );
    f.webhook.kill();
    let mut after = md_v1beta1("after");
    after["spec"]["minReadySeconds"] = json!(11);
    let created = call("POST", &f.url(&mds("v1beta1")), Some(&after)).unwrap();
    assert_eq!(created.code, 201, "{}", created.body);
    let v2 = f.get("v1beta2", "after").json();
    assert_eq!(v2["spec"]["template"]["spec"]["minReadySeconds"], 11);
    assert_eq!(
        v2["spec"]["template"]["spec"]["infrastructureRef"]["apiGroup"],
        "infrastructure.cluster.x-k8s.io"
    );
    assert_eq!(
        f.get("v1beta1", "a").json()["spec"]["template"],
        md_v1beta1("a")["spec"]["template"]
    );

    // Every watcher kept its version and missed nothing across the swap.
    for (watcher, version) in [(&old_watch, "v1beta1"), (&new_watch, "v1beta2")] {
        let names: Vec<String> = (0..2)
            .map(|_| {
                let event = watcher.next(Duration::from_secs(10)).expect("an event");
                assert_eq!(event["type"], "ADDED", "{event}");
                assert_eq!(event["object"]["apiVersion"], format!("{GROUP}/{version}"));
                event["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(names, ["before", "after"], "{version}");
    }
    let list = call("GET", &f.url(&mds("v1beta1")), None).unwrap().json();
    assert_eq!(list["items"].as_array().unwrap().len(), 4);

    // A version that loses a field on the round trip is refused; the one in force serves on.
    let mut lossy = conversion_module(strategy_artifacts::MACHINEDEPLOYMENT_CONVERSION_LOSSY);
    let current = f.kube.get(&format!("{MODULES}/md-conversion"));
    lossy["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    let put = call(
        "PUT",
        &f.url(&format!("{MODULES}/md-conversion")),
        Some(&lossy),
    )
    .unwrap();
    assert_eq!(put.code, 200, "{}", put.body);
    let mut status = Value::Null;
    eventually("the lossy version refused", Duration::from_secs(20), || {
        status = f.kube.get(&format!("{MODULES}/md-conversion"))["status"].clone();
        status["phase"] == "Rejected"
    });
    let reason = status["reason"].as_str().unwrap();
    assert!(
        reason.contains("does not round-trip machinedeployments"),
        "{reason}"
    );
    assert!(reason.contains("/spec/template/spec/version"), "{reason}");
    assert_eq!(
        f.get("v1beta1", "a").json()["spec"]["template"]["spec"]["version"],
        "v1.31.0"
    );
}

/// The Go port of the conversion module converts as the Rust one does: both versions served
/// from one stored object once the webhook is gone.
#[test]
fn the_go_conversion_module_serves_both_versions() {
    // A Go module is ~6 MB, ~8 MB as base64 in a StrategyModule object.
    let mut f = Fixture::start_with(&["--max-request-body-bytes", "16777216"]);
    let module = conversion_module(strategy_artifacts::GO_MACHINEDEPLOYMENT_CONVERSION);
    assert_eq!(
        call("POST", &f.url(MODULES), Some(&module)).unwrap().code,
        201
    );
    eventually(
        "the Go conversion module active",
        Duration::from_secs(60),
        || f.kube.get(&format!("{MODULES}/md-conversion"))["status"]["phase"] == "Active",
    );
    f.webhook.kill();
    let mut md = md_v1beta1("go");
    md["spec"]["minReadySeconds"] = json!(7);
    let created = call("POST", &f.url(&mds("v1beta1")), Some(&md)).unwrap();
    assert_eq!(created.code, 201, "{}", created.body);
    let v2 = f.get("v1beta2", "go").json();
    assert_eq!(v2["apiVersion"], format!("{GROUP}/v1beta2"));
    assert_eq!(v2["spec"]["template"]["spec"]["minReadySeconds"], 7, "{v2}");
    assert!(v2["spec"].get("minReadySeconds").is_none(), "{v2}");
    assert_eq!(
        v2["spec"]["template"]["spec"]["infrastructureRef"]["apiGroup"],
        "infrastructure.cluster.x-k8s.io"
    );
    let back = f.get("v1beta1", "go").json();
    assert_eq!(back["spec"]["template"], md["spec"]["template"]);
    assert_eq!(back["spec"]["minReadySeconds"], 7);
}

#[test]
fn a_conversion_module_that_traps_answers_500_and_loses_nothing() {
    let f = Fixture::start();
    let resource = strategy_guest_sdk::abi::Resource {
        group: GROUP.into(),
        version: "v1beta2".into(),
        kind: "MachineDeployment".into(),
        plural: "machinedeployments".into(),
        scope: strategy_guest_sdk::abi::Scope::Namespaced as i32,
    };
    let wasm = f.kube.dir.path().join("trap.wasm");
    std::fs::write(
        &wasm,
        strategy_artifacts::hostile_converter("trap", resource),
    )
    .unwrap();
    // Nothing is stored yet, so there is nothing its round trip could be tried on.
    let module = conversion_module(wasm.to_str().unwrap());
    assert_eq!(
        call("POST", &f.url(MODULES), Some(&module)).unwrap().code,
        201
    );
    eventually(
        "the trapping module active",
        Duration::from_secs(20),
        || f.kube.get(&format!("{MODULES}/md-conversion"))["status"]["phase"] == "Active",
    );
    let refused = call("POST", &f.url(&mds("v1beta1")), Some(&md_v1beta1("a"))).unwrap();
    assert_eq!(refused.code, 500, "{}", refused.body);
    let status = refused.json();
    assert_eq!(status["reason"], "InternalError");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("conversion failed: strategy module \"hostile-converter\" failed"),
        "{message}"
    );
    // Nothing half-stored; the storage version needs no conversion and is served.
    let stored = call("GET", &f.url(&mds("v1beta2")), None).unwrap();
    assert_eq!(stored.code, 200);
    assert!(stored.json()["items"].as_array().unwrap().is_empty());
    let mut v2 = md_v1beta1("b");
    v2["apiVersion"] = json!(format!("{GROUP}/v1beta2"));
    v2["spec"]["template"]["spec"]["infrastructureRef"] = json!({"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": "infra"});
    v2["spec"]["template"]["spec"]["bootstrap"]["configRef"] = json!({"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "boot"});
    v2["spec"]["template"]["spec"]["minReadySeconds"] = v2["spec"]["minReadySeconds"].take();
    v2["spec"]
        .as_object_mut()
        .unwrap()
        .remove("minReadySeconds");
    let created = call("POST", &f.url(&mds("v1beta2")), Some(&v2)).unwrap();
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(f.get("v1beta1", "b").code, 500);
    assert_eq!(f.get("v1beta2", "b").code, 200);
}
