//! Policy bindings narrow their policy, with kubectl 1.35: a binding's `matchResources` with
//! only a namespace selector, only an object selector or only `excludeResourceRules` leaves the
//! policy's `matchConstraints` to name the resources ("when resourceRules is unset, it does not
//! constrain resource matching"), for validating (Deny and Warn) and mutating policies alike.

use std::time::Duration;

use strategy_host_e2e::{eventually, latest_kubectl_path, KubeFixture};

const POLICIES: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: staging, labels: {environment: test}}
---
apiVersion: v1
kind: Namespace
metadata: {name: live, labels: {environment: prod}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-debug}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["configmaps"]}
  validations:
  - expression: "!has(object.data) || !('debug' in object.data)"
    message: debug settings are not allowed
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-debug-in-test}
spec:
  policyName: no-debug
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {environment: test}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: team-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: team-label-on-frontends}
spec:
  policyName: team-label
  validationActions: [Warn]
  matchResources:
    objectSelector: {matchLabels: {tier: frontend}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: not-public}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps", "secrets"]}
  validations:
  - expression: "!has(object.metadata.annotations) || !('public' in object.metadata.annotations)"
    message: nothing may be public
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: not-public-but-secrets}
spec:
  policyName: not-public
  validationActions: [Deny]
  matchResources:
    excludeResourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["secrets"]}
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: stamp-environment}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'stamped': 'test'}}}"
  reinvocationPolicy: Never
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: stamp-environment-in-test}
spec:
  policyName: stamp-environment
  matchResources:
    namespaceSelector: {matchLabels: {environment: test}}
"#;

/// A ConfigMap or Secret manifest.
fn object(kind: &str, namespace: &str, name: &str, metadata: &str, data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: {kind}\nmetadata: {{name: {name}, namespace: {namespace}{metadata}}}\n\
         data: {{{data}}}\n"
    )
}

#[test]
fn bindings_that_select_only_namespaces_objects_or_exclusions_enforce_their_policy() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    k.ok_with(&["apply", "-f", "-"], Some(POLICIES));
    let create = |yaml: &str| k.run_with(&["create", "-f", "-"], Some(yaml));

    // Deny, bound by namespace alone: enforced in the test namespace, not in the other.
    let mut n = 0;
    let mut refusal = String::new();
    eventually(
        "the namespace-selected binding to deny",
        Duration::from_secs(10),
        || {
            n += 1;
            let (ok, _, err) = create(&object(
                "ConfigMap",
                "staging",
                &format!("debug-{n}"),
                "",
                "debug: 'true'",
            ));
            refusal = err;
            !ok
        },
    );
    assert!(
        refusal.contains("ValidatingAdmissionPolicy 'no-debug' with binding 'no-debug-in-test' denied request: debug settings are not allowed"),
        "{refusal}"
    );
    let (ok, out, err) = create(&object("ConfigMap", "live", "debug", "", "debug: 'true'"));
    assert!(ok, "a namespace the binding does not select: {out}{err}");

    // Warn, bound by object labels alone.
    let mut warning = String::new();
    eventually(
        "the object-selected binding to warn",
        Duration::from_secs(10),
        || {
            n += 1;
            let (ok, out, err) = create(&object(
                "ConfigMap",
                "live",
                &format!("frontend-{n}"),
                ", labels: {tier: frontend}",
                "",
            ));
            assert!(ok, "a Warn binding admits: {out}{err}");
            warning = err;
            warning.contains("Warning:")
        },
    );
    assert!(
        warning.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'team-label' with binding 'team-label-on-frontends': failed expression: has(object.metadata.labels) && 'team' in object.metadata.labels"),
        "{warning}"
    );
    let (ok, _, err) = create(&object(
        "ConfigMap",
        "live",
        "backend",
        ", labels: {tier: backend}",
        "",
    ));
    assert!(
        ok && !err.contains("Warning:"),
        "an unselected object: {err}"
    );

    // Deny, bound with exclusions alone: the policy's other resources stay enforced.
    let public = ", annotations: {public: 'yes'}";
    eventually(
        "the binding with exclusions to deny",
        Duration::from_secs(10),
        || {
            n += 1;
            let name = format!("public-{n}");
            let (ok, _, err) = create(&object("ConfigMap", "live", &name, public, ""));
            refusal = err;
            !ok
        },
    );
    assert!(
        refusal.contains("ValidatingAdmissionPolicy 'not-public' with binding 'not-public-but-secrets' denied request: nothing may be public"),
        "{refusal}"
    );
    let (ok, out, err) = create(&object("Secret", "live", "public", public, ""));
    assert!(ok, "an excluded resource: {out}{err}");

    // Mutating, bound by namespace alone.
    let stamped = |namespace: &str, name: &str| {
        k.ok_with(
            &[
                "create",
                "-f",
                "-",
                "-o",
                "jsonpath={.metadata.labels.stamped}",
            ],
            Some(&object("ConfigMap", namespace, name, "", "")),
        )
    };
    eventually(
        "the namespace-selected mutating binding to stamp",
        Duration::from_secs(10),
        || {
            n += 1;
            stamped("staging", &format!("stamped-{n}")) == "test"
        },
    );
    assert_eq!(stamped("live", "unstamped"), "");
}
