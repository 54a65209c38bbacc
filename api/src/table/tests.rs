//! Tests of server-side tables: columns from definitions and built-in kinds, cells and JSONPath.

use super::*;

/// A definition from a CRD with these printer columns (as their CRDs declare them).
fn crd(group: &str, kind: &str, columns: Value) -> ResourceDefinition {
    let plural = format!("{}s", kind.to_lowercase());
    ResourceDefinition::from_crd(&json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "kind": kind},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "additionalPrinterColumns": columns,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap()
}

fn names(t: &Value) -> Vec<&str> {
    t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

fn row(def: &ResourceDefinition, obj: Value) -> (Value, Vec<Value>) {
    let t = table(def, "v1", &[obj], json!({}), "None", true);
    let cells = t["rows"][0]["cells"].as_array().unwrap().clone();
    (t, cells)
}

/// The table of `obj` under a CRD with these printer columns, and its one row's cells.
fn crd_row(group: &str, kind: &str, columns: Value, obj: Value) -> (Value, Vec<Value>) {
    row(&crd(group, kind, columns), obj)
}

/// The definition of `plural` among these built-in definitions.
fn builtin(definitions: Vec<ResourceDefinition>, plural: &str) -> ResourceDefinition {
    definitions
        .into_iter()
        .find(|d| d.plural == plural)
        .unwrap()
}

fn meta(name: &str) -> Value {
    json!({"name": name, "creationTimestamp": "2020-01-01T00:00:00Z"})
}

#[test]
fn argo_cd_application_declares_no_age() {
    let (t, cells) = crd_row(
        "argoproj.io",
        "Application",
        json!([
            {"name": "Sync Status", "type": "string", "jsonPath": ".status.sync.status"},
            {"name": "Health Status", "type": "string", "jsonPath": ".status.health.status"},
            {"name": "Revision", "type": "string", "jsonPath": ".status.sync.revision", "priority": 10},
            {"name": "Project", "type": "string", "jsonPath": ".spec.project", "priority": 10}
        ]),
        json!({"metadata": meta("guestbook"), "spec": {"project": "default"},
               "status": {"sync": {"status": "Synced", "revision": "53e28ff"}}}),
    );
    assert_eq!(
        names(&t),
        [
            "Name",
            "Sync Status",
            "Health Status",
            "Revision",
            "Project"
        ]
    );
    assert_eq!(
        cells,
        [
            json!("guestbook"),
            json!("Synced"),
            Value::Null,
            json!("53e28ff"),
            json!("default")
        ]
    );
    assert_eq!(t["columnDefinitions"][4]["priority"], 10);
    assert_eq!(
        t["columnDefinitions"][1]["description"],
        "Custom resource definition column (in JSONPath format): .status.sync.status"
    );
}

#[test]
fn gateway_api_httproute_prints_lists_as_json() {
    let (t, cells) = crd_row(
        "gateway.networking.k8s.io",
        "HTTPRoute",
        json!([
            {"name": "Hostnames", "type": "string", "jsonPath": ".spec.hostnames"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
        ]),
        json!({"metadata": meta("web"), "spec": {"hostnames": ["example.com", "www.example.com"]}}),
    );
    assert_eq!(names(&t), ["Name", "Hostnames", "Age"]);
    assert_eq!(cells[1], json!(r#"["example.com","www.example.com"]"#));
    // Created in 2020: years old, printed as a duration rather than the timestamp.
    assert!(cells[2].as_str().unwrap().contains('y'), "{}", cells[2]);
}

#[test]
fn keda_columns_print_the_first_match() {
    let (t, cells) = crd_row(
        "keda.sh",
        "ScaledObject",
        json!([
            {"name": "ScaleTargetKind", "type": "string", "jsonPath": ".status.scaleTargetKind"},
            {"name": "ScaleTargetName", "type": "string", "jsonPath": ".spec.scaleTargetRef.name"},
            {"name": "Min", "type": "integer", "jsonPath": ".spec.minReplicaCount"},
            {"name": "Max", "type": "integer", "jsonPath": ".spec.maxReplicaCount"},
            {"name": "Triggers", "type": "string", "jsonPath": ".spec.triggers[*].type"},
            {"name": "Authentication", "type": "string", "jsonPath": ".spec.triggers[*].authenticationRef.name"},
            {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
            {"name": "Active", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Active\")].status"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
        ]),
        json!({"metadata": meta("worker"),
               "spec": {"scaleTargetRef": {"name": "worker"}, "minReplicaCount": 1, "maxReplicaCount": "ten",
                        "triggers": [{"type": "cpu"}, {"type": "prometheus", "authenticationRef": {"name": "prom-auth"}}]},
               "status": {"scaleTargetKind": "apps/v1.Deployment",
                          "conditions": [{"type": "Ready", "status": "True"}, {"type": "Active", "status": "False"}]}}),
    );
    assert_eq!(names(&t).len(), 10, "no second Age: {:?}", names(&t));
    assert_eq!(
        &cells[1..9],
        [
            json!("apps/v1.Deployment"),
            json!("worker"),
            json!(1),
            // A string where the column says integer prints nothing, as Kubernetes.
            Value::Null,
            json!("cpu"),
            json!("prom-auth"),
            json!("True"),
            json!("False"),
        ]
    );
    let (t, cells) = crd_row(
        "keda.sh",
        "TriggerAuthentication",
        json!([
            {"name": "PodIdentity", "type": "string", "jsonPath": ".spec.podIdentity.provider"},
            {"name": "Secret", "type": "string", "jsonPath": ".spec.secretTargetRef[*].name"},
            {"name": "Env", "type": "string", "jsonPath": ".spec.env[*].name"}
        ]),
        json!({"metadata": meta("auth"),
               "spec": {"secretTargetRef": [{"parameter": "user", "name": "creds", "key": "u"},
                                            {"parameter": "password", "name": "other", "key": "p"}]}}),
    );
    assert_eq!(names(&t), ["Name", "PodIdentity", "Secret", "Env"]);
    assert_eq!(cells[1..], [Value::Null, json!("creds"), Value::Null]);
}

#[test]
fn default_and_builtin_columns() {
    let none = crd("example.com", "Plain", json!([]));
    assert_eq!(
        names(&row(&none, json!({"metadata": meta("p")})).0),
        ["Name", "Age"]
    );
    let ns = ResourceDefinition::namespaces();
    assert_eq!(
        names(&row(&ns, json!({"metadata": meta("d")})).0),
        ["Name", "Status", "Age"]
    );
    let crds = ResourceDefinition::custom_resource_definitions();
    assert_eq!(
        names(&row(&crds, json!({"metadata": meta("c")})).0),
        ["Name", "Created At"]
    );
}

#[test]
fn builtin_template_columns_join_what_they_select() {
    let role_binding = builtin(
        strategy_host_authorization::rbac::definitions(),
        "rolebindings",
    );
    let (t, cells) = row(
        &role_binding,
        json!({"metadata": meta("rb"), "roleRef": {"kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                            {"kind": "ServiceAccount", "name": "ci", "namespace": "team"}]}),
    );
    assert_eq!(
        names(&t),
        ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
    );
    assert_eq!(cells[1], json!("ClusterRole/view"));
    assert_eq!(cells[3], json!("alice, bob"));
    assert_eq!(cells[4], json!(""));
    assert_eq!(cells[5], json!("team/ci"));
    let roles = builtin(strategy_host_authorization::rbac::definitions(), "roles");
    let (t, cells) = row(&roles, json!({"metadata": meta("r")}));
    assert_eq!(names(&t), ["Name", "Created At"]);
    assert_eq!(cells[1], json!("2020-01-01T00:00:00Z"));
}

#[test]
fn service_columns_read_as_kubectl_prints_them() {
    let services = builtin(strategy_host_registry::service::definitions(), "services");
    let (t, cells) = row(
        &services,
        json!({"metadata": meta("web"), "spec": {"type": "NodePort", "clusterIP": "10.96.0.7",
            "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080},
                      {"port": 53, "protocol": "UDP"}]}, "status": {"loadBalancer": {}}}),
    );
    assert_eq!(
        names(&t),
        [
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector"
        ]
    );
    assert_eq!(
        cells[1..5],
        [
            json!("NodePort"),
            json!("10.96.0.7"),
            json!("<none>"),
            json!("80:30080/TCP, 53/UDP")
        ]
    );
    let slices = builtin(
        strategy_host_registry::service::definitions(),
        "endpointslices",
    );
    let (_, cells) = row(
        &slices,
        json!({"metadata": meta("web-abc"), "addressType": "IPv4", "ports": [{"port": 8443}],
            "endpoints": [{"addresses": ["10.0.0.5"]}, {"addresses": ["10.0.0.6"]}]}),
    );
    assert_eq!(
        cells[1..4],
        [json!("IPv4"), json!("8443"), json!("10.0.0.5, 10.0.0.6")]
    );
}

#[test]
fn cells_follow_the_column_type() {
    let col = |type_: &str| PrinterColumn {
        name: "C".into(),
        type_: type_.into(),
        format: String::new(),
        description: String::new(),
        priority: 0,
        json_path: ".v".into(),
        count_paths: Vec::new(),
        template: String::new(),
        absent: String::new(),
    };
    let at = |type_: &str, v: Value| cell(&json!({ "v": v }), &col(type_));
    assert_eq!(
        at("string", json!({"b": "<x>", "a": 1})),
        json!(r#"{"a":1,"b":"\u003cx\u003e"}"#)
    );
    assert_eq!(at("string", Value::Null), json!("<no value>"));
    assert_eq!(at("string", json!(true)), json!("true"));
    assert_eq!(at("string", json!(3)), json!("3"));
    assert_eq!(at("string", json!(1.5)), json!("1.5"));
    assert_eq!(at("string", json!(1e6)), json!("1e+06"));
    assert_eq!(at("string", json!(123456.0)), json!("123456"));
    assert_eq!(at("string", json!(0.00001)), json!("1e-05"));
    assert_eq!(at("integer", json!(2.7)), json!(2));
    assert_eq!(at("number", json!(2)), json!(2.0));
    assert_eq!(at("boolean", json!("yes")), Value::Null);
    assert_eq!(at("date", json!("yesterday")), json!("<invalid>"));
    assert_eq!(at("date", json!(5)), Value::Null);
    assert_eq!(cell(&json!({}), &col("string")), Value::Null);
}

#[test]
fn durations_and_accept() {
    assert_eq!(human_duration(5), "5s");
    assert_eq!(human_duration(185), "3m5s");
    assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
    assert_eq!(human_duration(3 * 86_400), "3d");
    assert!(wants_table(Some(
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    )));
    assert!(!wants_table(Some("application/json")));
}
