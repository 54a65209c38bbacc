//! ValidatingAdmissionPolicies with kubectl 1.35: the Gateway API standard install's
//! `safe-upgrades` policy, unchanged, refusing Gateway API CRDs older than v1.4.0 with
//! Kubernetes' message and admitting current ones; a policy with params (a ConfigMap) denying
//! and another bound with Warn; mutating policies; type checking into a policy's status.

use std::path::PathBuf;
use std::time::Duration;

use strategy_host_e2e::{eventually, latest_kubectl_path, KubeFixture};

fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(path)
}

#[test]
fn the_gateway_api_safe_upgrades_policy_guards_its_crds() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    let policy = data("admission/gateway.networking.k8s.io_vap_safeupgrades.yaml");
    let out = k.ok(&["apply", "-f", &policy.display().to_string()]);
    assert!(
        out.contains("validatingadmissionpolicy.admissionregistration.k8s.io/safe-upgrades.gateway.networking.k8s.io created"),
        "{out}"
    );
    // Its expressions type-check against the CustomResourceDefinition kind.
    let path = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/safe-upgrades.gateway.networking.k8s.io";
    eventually("the policy's status", Duration::from_secs(10), || {
        k.get(path)["status"]["observedGeneration"] == 1
    });
    assert_eq!(k.get(path)["status"]["typeChecking"], serde_json::json!({}));
    // The CRDs kept as test data are a development bundle (v0.0.0-dev): refused.
    let old = data("crds/gateway-api/gateway.networking.k8s.io_gateways.yaml")
        .display()
        .to_string();
    let mut refusal = String::new();
    eventually(
        "the policy to refuse an old Gateway API CRD",
        Duration::from_secs(10),
        || {
            let (ok, _, err) = k.run(&["apply", "-f", &old]);
            refusal = err;
            !ok
        },
    );
    assert!(
        refusal.contains("ValidatingAdmissionPolicy 'safe-upgrades.gateway.networking.k8s.io' with binding 'safe-upgrades.gateway.networking.k8s.io' denied request: Installing CRDs with version before v1.4.0 is prohibited by default."),
        "{refusal}"
    );
    // The same CRD as the v1.4.0 standard bundle is admitted.
    let current = std::fs::read_to_string(&old)
        .unwrap()
        .replace("bundle-version: v0.0.0-dev", "bundle-version: v1.4.0");
    let out = k.ok_with(&["apply", "-f", "-"], Some(&current));
    assert!(
        out.contains("gateways.gateway.networking.k8s.io created"),
        "{out}"
    );
    // An experimental-channel CRD on top is refused with the first validation's message.
    let experimental = current.replace("channel: standard", "channel: experimental");
    let (ok, _, err) = k.run_with(&["apply", "-f", "-"], Some(&experimental));
    assert!(!ok);
    assert!(err.contains("Installing experimental CRDs on top of standard channel CRDs is prohibited by default."), "{err}");
}

#[test]
fn a_policy_with_params_denies_and_a_warn_binding_warns() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    let manifests = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: limits, namespace: default}
data: {max: "2"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-keys}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["configmaps"]}
  matchConditions:
  - {name: not-the-limits, expression: "object.metadata.name != 'limits'"}
  validations:
  - expression: "!has(object.data) || size(object.data) <= int(params.data.max)"
    messageExpression: "'at most ' + params.data.max + ' keys'"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-keys-binding}
spec:
  policyName: max-keys
  validationActions: [Deny]
  paramRef: {name: limits, namespace: default, parameterNotFoundAction: Deny}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: labelled}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: labelled-binding}
spec:
  policyName: labelled
  validationActions: [Warn]
"#;
    k.ok_with(&["apply", "-f", "-"], Some(manifests));
    let big =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {a: '1', b: '2', c: '3'}\n";
    let mut refusal = String::new();
    eventually(
        "the params policy to deny a big ConfigMap",
        Duration::from_secs(10),
        || {
            let (ok, _, err) = k.run_with(&["create", "-f", "-"], Some(big));
            refusal = err;
            !ok
        },
    );
    assert!(
        refusal.contains("configmaps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-binding' denied request: at most 2 keys")
            || refusal.contains("ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-binding' denied request: at most 2 keys"),
        "{refusal}"
    );
    let small = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: small}\ndata: {a: '1'}\n";
    let (ok, out, err) = k.run_with(&["create", "-f", "-"], Some(small));
    assert!(ok, "{out}{err}");
    assert!(
        err.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'labelled' with binding 'labelled-binding': failed expression: has(object.metadata.labels) && 'team' in object.metadata.labels"),
        "{err}"
    );
}

#[test]
fn mutating_policies_apply_configurations_and_json_patches() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    let manifests = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: defaults, namespace: default}
data: {env: prod}
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: env-label}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  matchConditions:
  - {name: not-the-defaults, expression: "object.metadata.name != 'defaults'"}
  variables:
  - {name: env, expression: "params.data.env"}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'env': variables.env}}}"
  reinvocationPolicy: Never
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: env-label-binding}
spec:
  policyName: env-label
  paramRef: {name: defaults, namespace: default, parameterNotFoundAction: Deny}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: stamp-secrets}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["secrets"]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        [JSONPatch{op: "add", path: "/metadata/annotations",
                   value: {"stamped-by": request.userInfo.username}}]
  reinvocationPolicy: Never
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: stamp-secrets-binding}
spec:
  policyName: stamp-secrets
"#;
    let out = k.ok_with(&["apply", "-f", "-"], Some(manifests));
    assert!(
        out.contains("mutatingadmissionpolicy.admissionregistration.k8s.io/env-label created"),
        "{out}"
    );
    let mut n = 0;
    eventually(
        "the policy to label a new ConfigMap",
        Duration::from_secs(10),
        || {
            n += 1;
            let name = format!("web-{n}");
            k.ok(&["create", "configmap", &name, "--from-literal=a=b"]);
            k.ok(&[
                "get",
                "configmap",
                &name,
                "-o",
                "jsonpath={.metadata.labels.env}",
            ]) == "prod"
        },
    );
    let stamped = k.ok(&[
        "create",
        "secret",
        "generic",
        "s1",
        "--from-literal=a=b",
        "-o",
        "jsonpath={.metadata.annotations}",
    ]);
    // Development mode makes every request the user `admin`.
    assert_eq!(stamped, r#"{"stamped-by":"admin"}"#);
    // The kinds are served at v1, as Kubernetes 1.36 serves them, and still at v1beta1: each
    // policy reads back at both.
    let resources = k.ok(&[
        "api-resources",
        "--api-group",
        "admissionregistration.k8s.io",
    ]);
    assert!(
        resources
            .lines()
            .any(|l| l.starts_with("mutatingadmissionpolicies ")
                && l.contains("admissionregistration.k8s.io/v1 ")),
        "{resources}"
    );
    for version in ["v1", "v1beta1"] {
        for (plural, name) in [
            ("mutatingadmissionpolicies", "env-label"),
            ("mutatingadmissionpolicies", "stamp-secrets"),
            ("mutatingadmissionpolicybindings", "stamp-secrets-binding"),
        ] {
            let path = format!("/apis/admissionregistration.k8s.io/{version}/{plural}/{name}");
            let got = k.ok(&["get", "--raw", &path]);
            let got: serde_json::Value = serde_json::from_str(&got).unwrap();
            assert_eq!(
                got["apiVersion"],
                format!("admissionregistration.k8s.io/{version}"),
                "{path}"
            );
        }
    }
}

/// A policy's expressions are type-checked against the kinds it matches, into its status, as
/// Kubernetes' status controller does.
#[test]
fn a_misspelt_field_shows_in_the_policy_status_until_fixed() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    let policy = |expression: &str| {
        format!(
            r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: typo.example.com
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  validations:
  - expression: "{expression}"
  - expression: "has(object.data) || object.metadata.name != ''"
"#
        )
    };
    let path = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/typo.example.com";
    k.ok_with(
        &["apply", "-f", "-"],
        Some(&policy("object.dta.size() < 10")),
    );
    let mut status = serde_json::Value::Null;
    eventually("the policy's status", Duration::from_secs(10), || {
        status = k.get(path)["status"].clone();
        status["observedGeneration"] == 1
    });
    assert_eq!(
        status["typeChecking"]["expressionWarnings"],
        serde_json::json!([{
            "fieldRef": "spec.validations[0].expression",
            "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'dta'\n | object.dta.size() < 10\n | ......^",
        }]),
        "{status}"
    );
    // Fixed: the next generation's status has no warning.
    k.ok_with(
        &["apply", "-f", "-"],
        Some(&policy("object.data.size() < 10")),
    );
    eventually("the fixed policy's status", Duration::from_secs(10), || {
        status = k.get(path)["status"].clone();
        status["observedGeneration"] == 2
    });
    assert_eq!(status["typeChecking"], serde_json::json!({}), "{status}");
}
