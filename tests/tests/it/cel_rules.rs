//! CEL validation rules (`x-kubernetes-validations`) end to end against the real binary, with
//! real CRDs kept as test data (Gateway API, Karpenter; see `tests/data/crds/README.md`): valid
//! objects accepted, objects breaking several rules refused with Kubernetes' messages, transition
//! rules, messageExpression, reasons and field paths, rules refused at CRD write (not compiling,
//! too costly), and a rule failing at run time answering 422 while the server serves on.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use strategy_host_e2e::{call, eventually, latest_kubectl_path, KubeFixture, Reply};

fn crd_file(path: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data/crds")
        .join(path)
        .display()
        .to_string()
}

/// A server and the newest kubectl, with what these tests do to it.
struct Server(KubeFixture);

impl std::ops::Deref for Server {
    type Target = KubeFixture;

    fn deref(&self) -> &KubeFixture {
        &self.0
    }
}

impl Server {
    fn start() -> Self {
        Self(KubeFixture::start(latest_kubectl_path().unwrap()))
    }

    /// Applies a CRD file server-side (the big ones exceed client-side apply's annotation) and
    /// waits until its resource is served.
    fn define(&self, file: &str, collection: &str) {
        self.ok(&["apply", "--server-side", "-f", &crd_file(file)]);
        eventually(
            &format!("{collection} served"),
            Duration::from_secs(10),
            || call("GET", &self.host.url(collection), None).unwrap().code == 200,
        );
    }

    fn post(&self, collection: &str, obj: &Value) -> Reply {
        call("POST", &self.host.url(collection), Some(obj)).unwrap()
    }
}

/// The (field, message) of each cause of a 422.
fn causes(reply: &Reply) -> Vec<(String, String)> {
    assert_eq!(reply.code, 422, "{}", reply.body);
    let status = reply.json();
    assert_eq!(status["reason"], "Invalid");
    status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap().to_string(),
                c["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const GATEWAYS: &str = "/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways";
const ROUTES: &str = "/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes";
const NODEPOOLS: &str = "/apis/karpenter.sh/v1/nodepools";

#[test]
fn gateway_api_rules_are_enforced() {
    let s = Server::start();
    s.define(
        "gateway-api/gateway.networking.k8s.io_gateways.yaml",
        GATEWAYS,
    );
    s.define(
        "gateway-api/gateway.networking.k8s.io_httproutes.yaml",
        ROUTES,
    );
    let gateway = |name: &str, listeners: Value| {
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": name},
               "spec": {"gatewayClassName": "example", "listeners": listeners}})
    };
    let valid = gateway(
        "web",
        json!([
            {"name": "http", "protocol": "HTTP", "port": 80},
            {"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "shop.example.com",
             "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-cert"}]}}
        ]),
    );
    assert_eq!(s.post(GATEWAYS, &valid).code, 201);
    let broken = gateway(
        "broken",
        json!([
            {"name": "http", "protocol": "HTTP", "port": 80, "tls": {"mode": "Terminate", "certificateRefs": [{"name": "c"}]}},
            {"name": "http", "protocol": "TCP", "port": 81, "hostname": "a.example.com"}
        ]),
    );
    let refused = s.post(GATEWAYS, &broken);
    let got = causes(&refused);
    for message in [
        "Invalid value: \"array\": tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']",
        "Invalid value: \"array\": hostname must not be specified for protocols ['TCP', 'UDP']",
        "Invalid value: \"array\": Listener name must be unique within the Gateway",
    ] {
        assert!(
            got.contains(&("spec.listeners".to_string(), message.to_string())),
            "{got:?}"
        );
    }
    assert!(refused.json()["message"]
        .as_str()
        .unwrap()
        .starts_with("Gateway.gateway.networking.k8s.io \"broken\" is invalid"));

    let route = |name: &str, rules: Value| {
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": name},
               "spec": {"parentRefs": [{"name": "web"}], "rules": rules}})
    };
    let ok = route(
        "shop",
        json!([{"matches": [{"path": {"type": "PathPrefix", "value": "/shop"}}],
                                   "backendRefs": [{"name": "shop", "port": 8080}]}]),
    );
    assert_eq!(
        s.post(ROUTES, &ok).code,
        201,
        "{}",
        s.post(ROUTES, &ok).body
    );
    let bad = route(
        "bad",
        json!([{"matches": [{"path": {"type": "PathPrefix", "value": "/shop/../admin"}}],
                                   "backendRefs": [{"name": "shop", "port": 8080}]}]),
    );
    let got = causes(&s.post(ROUTES, &bad));
    assert!(
        got.iter()
            .any(|(_, m)| m.contains("must not contain '/../'")),
        "{got:?}"
    );
    // The server is healthy after all of it.
    assert_eq!(call("GET", &s.host.url("/readyz"), None).unwrap().code, 200);
}

#[test]
fn karpenter_rules_hold_on_create_and_transition_rules_on_update() {
    let s = Server::start();
    s.define("karpenter/karpenter.sh_nodepools.yaml", NODEPOOLS);
    let pool = |name: &str, group: &str, key: &str| {
        json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
               "spec": {"template": {"spec": {
                   "nodeClassRef": {"group": group, "kind": "EC2NodeClass", "name": "default"},
                   "requirements": [{"key": key, "operator": "In", "values": ["amd64"]}]}},
                   "limits": {"cpu": "1000"}}})
    };
    let created = s.post(
        NODEPOOLS,
        &pool("general", "karpenter.k8s.aws", "kubernetes.io/arch"),
    );
    assert_eq!(created.code, 201, "{}", created.body);
    let got = causes(&s.post(
        NODEPOOLS,
        &pool("restricted", "karpenter.k8s.aws", "karpenter.sh/nodepool"),
    ));
    assert_eq!(
        got,
        [(
            "spec.template.spec.requirements[0].key".to_string(),
            "Invalid value: \"string\": label \"karpenter.sh/nodepool\" is restricted".to_string()
        )]
    );
    // nodeClassRef.group is immutable: a transition rule, checked on update only.
    let mut moved = created.json();
    moved["spec"]["template"]["spec"]["nodeClassRef"]["group"] = json!("other.example.com");
    let update = call(
        "PUT",
        &s.host.url(&format!("{NODEPOOLS}/general")),
        Some(&moved),
    )
    .unwrap();
    assert_eq!(
        causes(&update),
        [(
            "spec.template.spec.nodeClassRef".to_string(),
            "Invalid value: \"object\": nodeClassRef.group is immutable".to_string()
        )]
    );
    // A create with that group is fine: there is no old object.
    assert_eq!(
        s.post(
            NODEPOOLS,
            &pool("other", "other.example.com", "kubernetes.io/arch")
        )
        .code,
        201
    );
}

fn rules_crd(name: &str, spec_schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{name}s.rules.example.com")},
        "spec": {"group": "rules.example.com", "scope": "Namespaced",
                 "names": {"plural": format!("{name}s"), "singular": name, "kind": "Thing", "listKind": "ThingList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}}}]}
    })
}

#[test]
fn messages_reasons_and_refused_definitions_follow_kubernetes() {
    let s = Server::start();
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let spec = json!({"type": "object",
    "properties": {"replicas": {"type": "integer"}, "max": {"type": "integer"}, "name": {"type": "string", "maxLength": 32}},
    "x-kubernetes-validations": [
        {"rule": "self.replicas <= self.max", "messageExpression": "'replicas ' + string(self.replicas) + ' exceed max ' + string(self.max)"},
        {"rule": "!has(self.name) || self.name.startsWith('t-')", "message": "name needs the t- prefix", "reason": "FieldValueForbidden", "fieldPath": ".name"},
        {"rule": "self.replicas / (self.max - self.replicas) >= 0", "message": "ratio"}
    ]});
    assert_eq!(s.post(crds, &rules_crd("thing", spec)).code, 201);
    let things = "/apis/rules.example.com/v1/namespaces/default/things";
    eventually("things served", Duration::from_secs(10), || {
        call("GET", &s.host.url(things), None).unwrap().code == 200
    });
    let thing = |spec: Value| json!({"apiVersion": "rules.example.com/v1", "kind": "Thing", "metadata": {"name": "a"}, "spec": spec});
    assert_eq!(
        s.post(
            things,
            &thing(json!({"replicas": 1, "max": 3, "name": "t-a"}))
        )
        .code,
        201
    );
    let reply = s.post(
        things,
        &thing(json!({"replicas": 5, "max": 3, "name": "b"})),
    );
    let status = reply.json();
    let got = causes(&reply);
    assert!(
        got.contains(&(
            "spec".into(),
            "Invalid value: \"object\": replicas 5 exceed max 3".into()
        )),
        "{got:?}"
    );
    assert!(
        got.contains(&(
            "spec.name".into(),
            "Forbidden: name needs the t- prefix".into()
        )),
        "{got:?}"
    );
    let reasons: Vec<&str> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["reason"].as_str())
        .collect();
    assert!(reasons.contains(&"FieldValueForbidden"), "{reasons:?}");
    // A rule failing at run time (division by zero) answers 422, and the server serves on.
    let reply = s.post(
        things,
        &thing(json!({"replicas": 3, "max": 3, "name": "t-c"})),
    );
    assert_eq!(reply.code, 422, "{}", reply.body);
    assert_eq!(call("GET", &s.host.url("/readyz"), None).unwrap().code, 200);

    // A rule that does not compile, and one whose estimated cost is over budget, refuse the CRD.
    let bad = json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.replicas >"}]});
    let got = causes(&s.post(crds, &rules_crd("broken", bad)));
    assert_eq!(
        got[0].0,
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
    assert!(got[0].1.contains("compilation failed"), "{got:?}");
    let costly = json!({"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(a, self.all(b, self.all(c, a + b + c != '')))"}]}}});
    let got = causes(&s.post(crds, &rules_crd("costly", costly)));
    assert!(
        got[0]
            .1
            .starts_with("Forbidden: estimated rule cost exceeds budget"),
        "{got:?}"
    );
    assert_eq!(
        call(
            "GET",
            &s.host.url(&format!("{crds}/costlys.rules.example.com")),
            None
        )
        .unwrap()
        .code,
        404
    );
}
