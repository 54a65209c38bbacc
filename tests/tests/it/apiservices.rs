//! `apiregistration.k8s.io/v1` APIServices with kubectl 1.35, as kube-aggregator keeps them:
//! every served group/version has a local APIService (`Local`, `Available`), labelled
//! automanaged; a CustomResourceDefinition's versions come and go with it; one deleted by hand
//! comes back; a user's APIService naming a Service is defaulted and validated as Kubernetes
//! does, left alone by autoregistration and found unavailable (no such Service).

use std::time::Duration;

use serde_json::Value;
use strategy_host_e2e::{eventually, latest_kubectl_path, KubeFixture};

const WAIT: Duration = Duration::from_secs(20);

const WIDGETS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.aggregation.example.com
spec:
  group: aggregation.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v2beta1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

fn apiservice(k: &KubeFixture, name: &str) -> Option<Value> {
    let (ok, out, _) = k.run(&["get", "apiservice", name, "-o", "json"]);
    ok.then(|| serde_json::from_str(&out).unwrap())
}

#[test]
fn served_groups_have_local_apiservices_kept_as_kube_aggregator_keeps_them() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());

    // The built-in groups, listed as kubectl lists them, available.
    let names = [
        "v1.",
        "v1.apiregistration.k8s.io",
        "v1.admissionregistration.k8s.io",
    ];
    let row_cells = |table: &str, name: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|row| row.split_whitespace().map(String::from).collect())
            .unwrap_or_default()
    };
    let mut table = String::new();
    eventually("the built-in APIServices, available", WAIT, || {
        table = k.run(&["get", "apiservices"]).1;
        names
            .iter()
            .all(|name| row_cells(&table, name).get(1..3) == Some(&["Local".into(), "True".into()]))
    });
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SERVICE", "AVAILABLE", "AGE"], "{table}");
    let core = apiservice(&k, "v1.").unwrap();
    assert_eq!(
        core["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    assert_eq!(core["spec"]["groupPriorityMinimum"], 18000);
    assert_eq!(core["spec"]["versionPriority"], 1);
    assert_eq!(core["spec"]["service"], Value::Null);
    let available = &core["status"]["conditions"][0];
    assert_eq!(available["type"], "Available");
    assert_eq!(available["reason"], "Local");
    assert_eq!(
        available["message"],
        "Local APIServices are always available"
    );

    // A CRD's versions register, with a CRD's priorities, and go with it.
    k.ok_with(&["apply", "-f", "-"], Some(WIDGETS));
    eventually("the CRD's APIServices", WAIT, || {
        apiservice(&k, "v1.aggregation.example.com").is_some()
            && apiservice(&k, "v2beta1.aggregation.example.com").is_some()
    });
    let crd_service = apiservice(&k, "v2beta1.aggregation.example.com").unwrap();
    assert_eq!(
        crd_service["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    assert_eq!(crd_service["spec"]["groupPriorityMinimum"], 1000);
    assert_eq!(crd_service["spec"]["versionPriority"], 100);
    eventually("the CRD's APIService available", WAIT, || {
        apiservice(&k, "v1.aggregation.example.com")
            .is_some_and(|a| a["status"]["conditions"][0]["status"] == "True")
    });

    // One deleted by hand comes back.
    k.ok_with(&["delete", "apiservice", "v1.apiextensions.k8s.io"], None);
    eventually("v1.apiextensions.k8s.io back", WAIT, || {
        apiservice(&k, "v1.apiextensions.k8s.io").is_some()
    });

    k.ok_with(&["delete", "crd", "gadgets.aggregation.example.com"], None);
    eventually("the CRD's APIServices gone", WAIT, || {
        apiservice(&k, "v1.aggregation.example.com").is_none()
            && apiservice(&k, "v2beta1.aggregation.example.com").is_none()
    });

    // A user's APIService for an extension server: defaulted, shown by its Service, untouched.
    let metrics = r#"{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                 "versionPriority": 100, "insecureSkipTLSVerify": true,
                 "service": {"namespace": "kube-system", "name": "metrics-server"}}}"#;
    k.ok_with(&["create", "-f", "-"], Some(metrics));
    let created = apiservice(&k, "v1beta1.metrics.k8s.io").unwrap();
    assert_eq!(created["spec"]["service"]["port"], 443);
    let row = k.ok_with(&["get", "apiservice", "v1beta1.metrics.k8s.io"], None);
    assert!(row.contains("kube-system/metrics-server"), "{row}");
    // Autoregistration leaves it alone; the availability check finds no Service.
    let mut checked = Value::Null;
    eventually("the APIService checked", WAIT, || {
        checked = apiservice(&k, "v1beta1.metrics.k8s.io").unwrap();
        !checked["status"]["conditions"].is_null()
    });
    assert_eq!(checked["spec"], created["spec"], "the spec is the user's");
    assert!(checked["metadata"]["labels"].is_null(), "{checked}");
    let condition = &checked["status"]["conditions"][0];
    assert_eq!(condition["type"], "Available");
    assert_eq!(condition["status"], "False");
    assert_eq!(condition["reason"], "ServiceNotFound");
    assert_eq!(
        condition["message"],
        "service/metrics-server in \"kube-system\" is not present"
    );

    // Invalid ones, refused in Kubernetes' words.
    let invalid = |name: &str| {
        format!(
            r#"{{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {{"name": "{name}"}},
            "spec": {{"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 0,
                     "versionPriority": 100}}}}"#
        )
    };
    let (ok, _, err) = k.run_with(&["create", "-f", "-"], Some(&invalid("v1.metrics")));
    assert!(!ok);
    assert!(
        err.contains(r#"The APIService "v1.metrics" is invalid: "#)
            && err.contains(r#"metadata.name: Invalid value: "v1.metrics": must be `spec.version+"."+spec.group`"#)
            && err.contains("spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000"),
        "{err}"
    );
    let (ok, _, err) = k.run_with(&["create", "-f", "-"], Some(&invalid("metrics")));
    assert!(!ok);
    assert!(
        err.contains(
            r#"metadata.name: Invalid value: "metrics": must be in the form: <version>.<group>"#
        ),
        "{err}"
    );
}
