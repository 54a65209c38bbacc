//! Admission policy modules in the module table: the example `owner-label` policy loads with its
//! declaration, answers through the admission-policy interface, and takes a slot of its own that a second
//! source may not take; manifests that mix a strategy and a policy, or claim a policy on an ABI
//! older than 1.2, are refused at load.

use crate::wasm_common::*;
use prost::Message;
use serde_json::{json, Value};
use strategy_host::admission_policy::{AdmissionAttributes, AdmissionPhase, Operation};
use strategy_host::strategy::Admission;
use strategy_host::wasm::{ModuleTable, PolicyInForce};
use strategy_host::wasm_runtime::{abi, StrategyModule, ValidationAction};

/// What a policy is told about a write of the ConfigMap `default/c1`.
fn asked(operation: Operation, phase: AdmissionPhase) -> AdmissionAttributes {
    AdmissionAttributes {
        operation,
        phase,
        namespace: Some("default".into()),
        name: "c1".into(),
        subresource: None,
    }
}

/// What `policy` answers about the write `attributes` of the ConfigMap `object` (over `old`,
/// for an update).
async fn judged(
    policy: &PolicyInForce,
    attributes: &AdmissionAttributes,
    object: &mut Value,
    old: Option<&Value>,
) -> Admission {
    let ctx = ctx("", "ConfigMap", "configmaps", true);
    policy
        .policy
        .admit(&ctx, attributes, Some(object), old)
        .await
        .unwrap()
}

fn config_map(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "c1", "namespace": "default", "labels": labels}})
}

#[tokio::test]
async fn the_example_policy_loads_with_its_declaration_and_judges_writes() {
    let table = ModuleTable::new(runtime());
    table
        .load(
            "dir:owner-label.wasm",
            &std::fs::read(strategy_artifacts::OWNER_LABEL).unwrap(),
        )
        .expect("the policy loads");
    let policies = table.policies();
    assert_eq!(policies.len(), 1);
    let policy = &policies[0];
    assert_eq!(policy.name, "owner-label");
    let declared = policy.module.manifest().admission_policy.clone().unwrap();
    assert_eq!(declared.actions, [ValidationAction::Deny]);
    assert!(declared.fail_closed && !declared.mutates);
    assert_eq!(
        declared.match_resources["resourceRules"][0]["scope"],
        "Namespaced"
    );

    // Asked in the validating phase: refuses an object without an owner, admits one with.
    let create = asked(Operation::Create, AdmissionPhase::Validate);
    let mut bare = config_map(json!({}));
    let refused = judged(policy, &create, &mut bare, None).await;
    assert_eq!(refused.field_errors.len(), 1, "{refused:?}");
    assert_eq!(refused.field_errors[0].field, "metadata.labels[owner]");
    let mut owned = config_map(json!({"owner": "team-a"}));
    let admitted = judged(policy, &create, &mut owned, None).await;
    assert!(admitted.field_errors.is_empty(), "{admitted:?}");
    let old = config_map(json!({"owner": "team-a"}));
    let update = asked(Operation::Update, AdmissionPhase::Validate);
    let dropped = judged(policy, &update, &mut bare, Some(&old)).await;
    assert_eq!(
        dropped.field_errors.len(),
        1,
        "an update dropping the label is refused"
    );

    // It does not mutate: the mutating phase admits without asking it.
    let mutate = asked(Operation::Create, AdmissionPhase::Mutate);
    let untouched = judged(policy, &mutate, &mut bare, None).await;
    assert!(untouched.field_errors.is_empty());
    assert_eq!(bare, config_map(json!({})));
}

#[tokio::test]
async fn a_second_source_may_not_serve_the_same_policy() {
    let table = ModuleTable::new(runtime());
    let lenient = std::fs::read(strategy_artifacts::OWNER_LABEL).unwrap();
    let strict = std::fs::read(strategy_artifacts::OWNER_LABEL_STRICT).unwrap();
    table.load("dir:owner-label.wasm", &lenient).unwrap();
    let refused = table
        .load("api:owner-label", &strict)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("admission policy \"owner-label\" is already served by the module from dir:owner-label.wasm"),
        "{refused}"
    );
    // The same source swaps versions.
    table.load("dir:owner-label.wasm", &strict).unwrap();
    let policy = &table.policies()[0];
    let mut bob = config_map(json!({"owner": "Bob"}));
    let create = asked(Operation::Create, AdmissionPhase::Validate);
    let answer = judged(policy, &create, &mut bob, None).await;
    assert_eq!(
        answer.field_errors.len(),
        1,
        "the stricter version judges: {answer:?}"
    );
    assert!(table.unload("dir:owner-label.wasm"));
    assert!(table.policies().is_empty());
}

/// The owner-label manifest, changed by `edit`, served by the echoing fixture module.
fn policy_module(edit: impl FnOnce(&mut abi::Manifest)) -> Vec<u8> {
    let rt = runtime();
    let real = load(&rt, strategy_artifacts::OWNER_LABEL);
    let mut m = abi::Manifest {
        abi_version: 1,
        abi_minor_version: 2,
        name: real.name().to_owned(),
        operations: vec![abi::Operation::AdmitValidate as i32],
        host_functions: vec![abi::HostFunction::Log as i32],
        admission_policy: Some(abi::AdmissionPolicy {
            match_resources: serde_json::to_vec(
                &real
                    .manifest()
                    .admission_policy
                    .as_ref()
                    .unwrap()
                    .match_resources,
            )
            .unwrap(),
            ..Default::default()
        }),
        ..Default::default()
    };
    edit(&mut m);
    strategy_artifacts::echo_request(&m.encode_to_vec())
}

/// Why loading `bytes` was refused.
fn refusal(rt: &strategy_host::wasm::Runtime, bytes: &[u8]) -> String {
    match StrategyModule::load(rt, bytes) {
        Ok(_) => panic!("the module loaded"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn manifests_mixing_a_strategy_and_a_policy_or_too_old_for_policies_are_refused() {
    let rt = runtime();
    assert!(StrategyModule::load(&rt, &policy_module(|_| {})).is_ok());
    let refused = |edit: fn(&mut abi::Manifest)| refusal(&rt, &policy_module(edit));
    let old = refused(|m| m.abi_minor_version = 1);
    assert!(old.contains("admission policies need ABI 1.2"), "{old}");
    let both = refused(|m| {
        m.resources = abi::Manifest::decode(widget_manifest(1, &[]).as_slice())
            .unwrap()
            .resources
    });
    assert!(
        both.contains("either a strategy (resources) or an admission policy"),
        "{both}"
    );
    let strategy_op = refused(|m| m.operations.push(abi::Operation::Validate as i32));
    assert!(
        strategy_op.contains("only the admit operations"),
        "{strategy_op}"
    );
    let warn_and_deny = refused(|m| {
        m.admission_policy.as_mut().unwrap().validation_actions = vec!["Deny".into(), "Warn".into()]
    });
    assert!(
        warn_and_deny.contains("Deny and Warn may not be used together"),
        "{warn_and_deny}"
    );
    // A strategy may not claim the admit operations.
    let strategy = {
        let mut m = abi::Manifest::decode(widget_manifest(1, &[]).as_slice()).unwrap();
        m.operations.push(abi::Operation::AdmitValidate as i32);
        strategy_artifacts::echo_request(&m.encode_to_vec())
    };
    let err = refusal(&rt, &strategy);
    assert!(
        err.contains("the admit operations are for admission policies"),
        "{err}"
    );
}
