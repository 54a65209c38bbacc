//! Configuration written as protobuf, as client-go's clientsets write it: an admission policy
//! (its rules nested messages on the wire) that is then enforced, and a CustomResourceDefinition
//! that defines a resource whose schema is enforced.

use super::*;

#[test]
fn an_admission_policy_written_as_protobuf_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    // Without the status controller, whose write would move the policy's resourceVersion
    // between the create and the reads `round_trip` compares.
    let controllers = "--controllers=*,-validatingadmissionpolicy-status";
    let host = HostProcess::start(&["--data-dir", &data, controllers]).unwrap();
    let rule = admission::NamedRuleWithOperations {
        resource_names: Vec::new(),
        rule_with_operations: Some(admission::RuleWithOperations {
            operations: vec!["CREATE".into()],
            rule: Some(admission::Rule {
                api_groups: vec![String::new()],
                api_versions: vec!["v1".into()],
                resources: vec!["configmaps".into()],
                scope: None,
            }),
        }),
    };
    let policy = admission::ValidatingAdmissionPolicy {
        metadata: meta("small.example.com", ""),
        spec: Some(admission::ValidatingAdmissionPolicySpec {
            match_constraints: Some(admission::MatchResources {
                resource_rules: vec![rule],
                ..Default::default()
            }),
            validations: vec![admission::Validation {
                expression: Some("!has(object.data) || object.data.size() <= 1".into()),
                message: Some("at most one key".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    let policies = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
    let (created, json) = round_trip(
        &host,
        policies,
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        &policy,
        |p| p.metadata.as_ref().unwrap(),
    );
    let rules = &created
        .spec
        .unwrap()
        .match_constraints
        .unwrap()
        .resource_rules;
    let nested = rules[0].rule_with_operations.as_ref().unwrap();
    assert_eq!(nested.rule.as_ref().unwrap().resources, ["configmaps"]);
    // In JSON the rule's fields sit beside its operations, as Kubernetes writes them.
    assert_eq!(
        json["spec"]["matchConstraints"]["resourceRules"][0],
        json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]})
    );
    let binding = admission::ValidatingAdmissionPolicyBinding {
        metadata: meta("small.example.com", ""),
        spec: Some(admission::ValidatingAdmissionPolicyBindingSpec {
            policy_name: Some("small.example.com".into()),
            validation_actions: vec!["Deny".into()],
            ..Default::default()
        }),
    };
    round_trip(
        &host,
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        &binding,
        |b| b.metadata.as_ref().unwrap(),
    );
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "big"}, "data": {"a": "1", "b": "2"}});
    let url = host.url("/api/v1/namespaces/default/configmaps");
    let mut reply = call("POST", &url, Some(&big)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while reply.code == 201 && std::time::Instant::now() < deadline {
        call("DELETE", &format!("{url}/big"), None).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        reply = call("POST", &url, Some(&big)).unwrap();
    }
    assert_eq!(reply.code, 422, "{}", reply.body);
    assert!(reply.body.contains("at most one key"), "{}", reply.body);
}

/// A CRD as client-go's apiextensions clientset sends it: protobuf, with every non-pointer
/// field written (empty strings, an empty status), the schema's default as embedded JSON and
/// its items as a schema. Served, it defaults and validates widgets as its schema says.
#[test]
fn a_crd_written_as_protobuf_defines_its_resource() {
    let host = HostProcess::start(&[]).unwrap();
    let schema = |kind: &str| apiextensions::JsonSchemaProps {
        r#type: Some(kind.into()),
        ..Default::default()
    };
    let mut spec_properties = std::collections::BTreeMap::new();
    spec_properties.insert(
        "size".to_owned(),
        apiextensions::JsonSchemaProps {
            maximum: Some(100.0),
            ..schema("integer")
        },
    );
    spec_properties.insert(
        "color".to_owned(),
        apiextensions::JsonSchemaProps {
            default: Some(apiextensions::Json {
                raw: Some(br#""blue""#.to_vec()),
            }),
            ..schema("string")
        },
    );
    spec_properties.insert(
        "tags".to_owned(),
        apiextensions::JsonSchemaProps {
            items: Some(Box::new(apiextensions::JsonSchemaPropsOrArray {
                schema: Some(Box::new(schema("string"))),
                j_son_schemas: vec![],
            })),
            ..schema("array")
        },
    );
    let mut properties = std::collections::BTreeMap::new();
    properties.insert(
        "spec".to_owned(),
        apiextensions::JsonSchemaProps {
            properties: spec_properties,
            required: vec!["size".into()],
            ..schema("object")
        },
    );
    let names = |plural: &str, kind: &str| apiextensions::CustomResourceDefinitionNames {
        plural: Some(plural.into()),
        singular: Some(String::new()),
        kind: Some(kind.into()),
        list_kind: Some(String::new()),
        ..Default::default()
    };
    let crd = apiextensions::CustomResourceDefinition {
        metadata: Some(meta::ObjectMeta {
            name: Some("widgets.example.com".into()),
            ..Default::default()
        }),
        spec: Some(apiextensions::CustomResourceDefinitionSpec {
            group: Some("example.com".into()),
            names: Some(names("widgets", "Widget")),
            scope: Some("Namespaced".into()),
            versions: vec![apiextensions::CustomResourceDefinitionVersion {
                name: Some("v1".into()),
                served: Some(true),
                storage: Some(true),
                deprecated: Some(false),
                schema: Some(apiextensions::CustomResourceValidation {
                    open_apiv3_schema: Some(apiextensions::JsonSchemaProps {
                        properties,
                        ..schema("object")
                    }),
                }),
                ..Default::default()
            }],
            conversion: None,
            preserve_unknown_fields: Some(false),
        }),
        status: Some(apiextensions::CustomResourceDefinitionStatus {
            accepted_names: Some(names("", "")),
            observed_generation: Some(0),
            ..Default::default()
        }),
    };
    let (created, json) = round_trip(
        &host,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &crd,
        |c| c.metadata.as_ref().unwrap(),
    );
    let spec = created.spec.unwrap();
    let top = spec.versions[0]
        .schema
        .clone()
        .unwrap()
        .open_apiv3_schema
        .unwrap();
    let color = &top.properties["spec"].properties["color"];
    assert_eq!(
        color.default.as_ref().unwrap().raw.as_deref(),
        Some(&br#""blue""#[..])
    );
    assert_eq!(
        json["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["tags"]["items"],
        json!({"type": "string"})
    );
    let widgets = host.url("/apis/example.com/v1/namespaces/default/widgets");
    strategy_host_e2e::eventually(
        "widgets to be served",
        std::time::Duration::from_secs(10),
        || call("GET", &widgets, None).unwrap().code == 200,
    );
    let made = call("POST", &widgets, Some(&widget("w", 3))).unwrap();
    assert_eq!(made.code, 201, "{}", made.body);
    assert_eq!(
        made.json()["spec"]["color"],
        "blue",
        "the default from protobuf"
    );
    let refused = call("POST", &widgets, Some(&widget("big", 101))).unwrap();
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert!(
        refused.body.contains("should be less than or equal to 100"),
        "{}",
        refused.body
    );
    // The list reads back as protobuf too, its items established.
    let list = call_raw(
        "GET",
        &host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        None,
        &[("Accept", PROTOBUF)],
    )
    .unwrap();
    let (_, kind, list) = open::<apiextensions::CustomResourceDefinitionList>(&list.body);
    assert_eq!(kind, "CustomResourceDefinitionList");
    let status = list.items[0].status.clone().unwrap();
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.r#type.as_deref() == Some("Established")
                && c.status.as_deref() == Some("True")),
        "{status:?}"
    );
}
