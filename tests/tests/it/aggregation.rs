//! API aggregation with kubectl 1.35: an extension API server written as an outside author
//! writes one (`tests/python/extension_apiserver.py`: stdlib Python, its own serving CA,
//! trusting only the published request header CA) serves `samples.example.com/v1alpha1` behind
//! a Service, its EndpointSlice and an APIService. Requests reach it after this server's RBAC,
//! with the caller's identity in `X-Remote-*` and never the caller's credentials; reads and
//! watches stream through, with kubectl and the Python client; a dead backend makes the
//! APIService unavailable and costs only its group (a namespace deleted meanwhile waits,
//! reporting the discovery failure as Kubernetes does); a new endpoint brings it back and the
//! namespace is emptied through it; deleting the APIService takes the group out of discovery.

use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use strategy_host_e2e::eventually;
use strategy_host_e2e::pyjwt::Served;
use strategy_host_e2e::secure::{serving_certificate, Credential, SecureFixture};

const WAIT: Duration = Duration::from_secs(30);
const NAME: &str = "v1alpha1.samples.example.com";

/// The Service, its EndpointSlice (the backend on 127.0.0.1:`port`) and the APIService.
fn manifests(port: u16, ca_bundle: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Service
metadata: {{name: sample-api, namespace: default}}
spec:
  ports: [{{name: https, port: 443, targetPort: 8443}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: sample-api-1
  namespace: default
  labels: {{kubernetes.io/service-name: sample-api}}
addressType: IPv4
ports: [{{name: https, port: {port}, protocol: TCP}}]
endpoints: [{{addresses: ["127.0.0.1"], conditions: {{ready: true}}}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: {NAME}}}
spec:
  group: samples.example.com
  version: v1alpha1
  service: {{namespace: default, name: sample-api, port: 443}}
  caBundle: {ca_bundle}
  groupPriorityMinimum: 1000
  versionPriority: 15
"#
    )
}

fn available(k: &SecureFixture) -> (String, String) {
    let (ok, out, _) = k.kubectl(
        &Credential::Admin,
        &["get", "apiservice", NAME, "-o", "json"],
    );
    if !ok {
        return (String::new(), String::new());
    }
    let obj: Value = serde_json::from_str(&out).unwrap();
    let conditions = obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let c = conditions.iter().find(|c| c["type"] == "Available");
    c.map(|c| {
        (
            c["status"].as_str().unwrap_or_default().to_string(),
            c["reason"].as_str().unwrap_or_default().to_string(),
        )
    })
    .unwrap_or_default()
}

fn apply(k: &SecureFixture, manifests: &str) {
    let (ok, out, err) = k.kubectl_with(&Credential::Admin, &["apply", "-f", "-"], Some(manifests));
    assert!(ok, "kubectl apply failed:\n{out}\n{err}");
}

fn metrics(k: &SecureFixture) -> String {
    k.call(&Credential::Admin, "GET", "/metrics", None)
        .unwrap()
        .body
}

fn requests(backend: &Served) -> Vec<Value> {
    std::fs::read_to_string(backend.file("requests"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn an_extension_api_server_is_served_through_the_aggregator() {
    let (k, _tokens) = SecureFixture::start_with_tokens("bob-token,bob,1001,\"developers\"\n", &[]);
    let mut trust = None;
    eventually("the front proxy's CA published", WAIT, || {
        let (ok, out, _) = k.kubectl(
            &Credential::Admin,
            &[
                "get",
                "configmap",
                "-n",
                "kube-system",
                "extension-apiserver-authentication",
                "-o",
                "json",
            ],
        );
        trust = ok.then(|| serde_json::from_str::<Value>(&out).unwrap());
        trust.is_some()
    });
    let requestheader_ca = trust.unwrap()["data"]["requestheader-client-ca-file"]
        .as_str()
        .unwrap()
        .to_string();
    let certs = tempfile::tempdir().unwrap();
    let requestheader_file = certs.path().join("requestheader-ca.crt");
    std::fs::write(&requestheader_file, requestheader_ca).unwrap();
    let (ca, cert, key) = serving_certificate(certs.path(), &["sample-api.default.svc"]);
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let requestheader_file = requestheader_file.display().to_string();
    let backend = Served::start(
        "extension_apiserver.py",
        &[&cert, &key, &requestheader_file],
    );
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(std::fs::read(&ca).unwrap());
    apply(&k, &manifests(backend.port(), &ca_bundle));

    // Checked and available, listed with its Service.
    eventually("the APIService available", WAIT, || {
        available(&k).0 == "True"
    });
    assert_eq!(available(&k).1, "Passed");
    let table = k.ok(&Credential::Admin, &["get", "apiservice", NAME]);
    assert!(
        table.contains("default/sample-api") && table.contains("True"),
        "{table}"
    );

    // kubectl finds the kind through discovery and the request reaches the backend as the
    // admin, with no credential of the caller's.
    eventually("samples in kubectl's discovery", WAIT, || {
        k.kubectl(
            &Credential::Admin,
            &["api-resources", "--api-group=samples.example.com"],
        )
        .1
        .contains("samples")
    });
    let list: Value = serde_json::from_str(&k.ok(
        &Credential::Admin,
        &["get", "samples", "-n", "default", "-o", "json"],
    ))
    .unwrap();
    let spec = &list["items"][0]["spec"];
    assert_eq!(spec["user"], "admin", "{list}");
    assert!(
        spec["extra"]["authentication.kubernetes.io/credential-id"].is_array(),
        "{list}"
    );
    assert!(
        spec["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g == "system:masters"),
        "{list}"
    );
    assert_eq!(spec["sawAuthorization"], false);

    // RBAC first: bob may not, and the backend never hears of it.
    let before = requests(&backend).len();
    let bob = Credential::token("bob-token");
    let refused = k.fails(&bob, &["get", "samples", "-n", "default"]);
    assert!(
        refused.contains("samples.samples.example.com is forbidden: User \"bob\" cannot list resource \"samples\" in API group \"samples.example.com\" in the namespace \"default\""),
        "{refused}"
    );
    assert_eq!(
        requests(&backend)[before..]
            .iter()
            .filter(|r| r["user"] == "bob")
            .count(),
        0
    );
    let rbac = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: sample-reader}
rules: [{apiGroups: [samples.example.com], resources: [samples], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-reads-samples}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sample-reader}
subjects: [{kind: User, name: bob}]
"#;
    apply(&k, rbac);
    k.eventually("bob allowed", || {
        k.kubectl(&bob, &["get", "samples", "-n", "default"]).0
    });
    let whoami: Value = serde_json::from_str(&k.ok(
        &bob,
        &["get", "sample", "whoami", "-n", "default", "-o", "json"],
    ))
    .unwrap();
    assert_eq!(whoami["spec"]["user"], "bob");
    assert_eq!(
        whoami["spec"]["groups"],
        serde_json::json!(["developers", "system:authenticated"])
    );
    assert_eq!(
        whoami["spec"]["sawAuthorization"], false,
        "bob's token was forwarded"
    );

    // The Python client reads and watches it through the aggregator too.
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = std::process::Command::new("python3")
        .arg(root.join("tests/python/aggregated_client.py"))
        .arg(&k.host.base_url)
        .arg(k.ca_file())
        .arg("bob-token")
        .env("PYTHONPATH", root.join(".tools/python"))
        .output()
        .unwrap();
    let seen: Value = serde_json::from_slice(&python.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&python.stderr)));
    assert_eq!(seen["listed"], serde_json::json!(["whoami"]), "{seen}");
    assert_eq!(seen["user"], "bob", "{seen}");
    assert_eq!(
        seen["events"],
        serde_json::json!(["ADDED", "MODIFIED"]),
        "{seen}"
    );

    // A watch streams through.
    let (_, events, _) = k.kubectl(
        &bob,
        &[
            "get",
            "samples",
            "-n",
            "default",
            "--watch",
            "--output-watch-events",
            "-o",
            "json",
            "--request-timeout=3s",
        ],
    );
    assert!(
        events.contains("ADDED") && events.contains("MODIFIED"),
        "{events}"
    );

    // Killed, the backend makes its group answer 503 `service unavailable`; the failed request
    // has its APIService checked at once and found unavailable; the other groups serve on.
    drop(backend);
    let down = k.fails(&Credential::Admin, &["get", "samples", "-n", "default"]);
    assert!(
        down.contains("Error from server (ServiceUnavailable): service unavailable"),
        "{down}"
    );
    eventually(
        "the APIService unavailable",
        Duration::from_secs(10),
        || available(&k).0 == "False",
    );
    assert_eq!(available(&k).1, "FailedDiscoveryCheck");
    assert!(
        metrics(&k).contains(&format!(
            "aggregator_unavailable_apiservice{{name=\"{NAME}\"}} 1"
        )),
        "{}",
        metrics(&k)
    );
    k.ok(
        &Credential::Admin,
        &["get", "configmaps", "-n", "kube-system"],
    );
    // A namespace deleted meanwhile waits, saying why, as Kubernetes' does.
    k.ok(&Credential::Admin, &["create", "namespace", "stuck"]);
    k.ok(
        &Credential::Admin,
        &["delete", "namespace", "stuck", "--wait=false"],
    );
    let mut stuck = Value::Null;
    eventually("the namespace's discovery failure reported", WAIT, || {
        let (ok, out, _) = k.kubectl(
            &Credential::Admin,
            &["get", "namespace", "stuck", "-o", "json"],
        );
        stuck = if ok {
            serde_json::from_str(&out).unwrap()
        } else {
            Value::Null
        };
        stuck["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "NamespaceDeletionDiscoveryFailure" && c["status"] == "True")
        })
    });
    let failure = stuck["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "NamespaceDeletionDiscoveryFailure")
        .unwrap()
        .clone();
    assert_eq!(failure["reason"], "DiscoveryFailed");
    assert_eq!(
        failure["message"],
        "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: samples.example.com/v1alpha1: stale GroupVersion discovery: samples.example.com/v1alpha1"
    );
    assert_eq!(stuck["status"]["phase"], "Terminating");

    // A new backend on another port, named by the EndpointSlice, brings it back.
    let again = Served::start(
        "extension_apiserver.py",
        &[&cert, &key, &requestheader_file],
    );
    apply(&k, &manifests(again.port(), &ca_bundle));
    eventually("the APIService available again", WAIT, || {
        available(&k).0 == "True"
    });
    assert!(metrics(&k).contains(&format!(
        "aggregator_unavailable_apiservice{{name=\"{NAME}\"}} 0"
    )));
    k.ok(&Credential::Admin, &["get", "samples", "-n", "default"]);
    // The waiting namespace is emptied through the backend (deletecollection) and goes.
    eventually("the stuck namespace gone", WAIT, || {
        !k.kubectl(&Credential::Admin, &["get", "namespace", "stuck"])
            .0
    });
    assert!(
        requests(&again).iter().any(|r| r["method"] == "DELETE"
            && r["path"] == "/apis/samples.example.com/v1alpha1/namespaces/stuck/samples"),
        "{:?}",
        requests(&again)
    );

    // Deleted, its group leaves discovery.
    k.ok(&Credential::Admin, &["delete", "apiservice", NAME]);
    let groups = k.ok(&Credential::Admin, &["get", "--raw", "/apis"]);
    assert!(!groups.contains("samples.example.com"), "{groups}");
}
