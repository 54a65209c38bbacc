//! CustomResourceDefinitions: a definition with every field of its spec, status and top-level
//! schema round-trips (its nested schemas need not set every field), the either-or schema types
//! take each of their JSON forms, and bytes as client-go's apiextensions clientset writes them
//! decode to the JSON kube-apiserver stores.

use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use serde_json::{json, Value};

use super::fixtures::{object_meta, typed, TIME};
use super::{codec, decode, decoded_from_go, encoded, named, read_as, supports, with_lists};

const V1: &str = "apiextensions.k8s.io/v1";

/// A schema that sets every field; its nested schemas are small.
fn full_schema() -> Value {
    // As JSON text: the `json!` macro's recursion limit stops short of this many fields.
    serde_json::from_str(
        r##"{
        "id": "urn:widget", "$schema": "http://json-schema.org/draft-04/schema#",
        "$ref": "#/definitions/w", "description": "a widget", "type": "object",
        "format": "widget", "title": "Widget", "default": {"size": 1},
        "maximum": 10, "exclusiveMaximum": true, "minimum": 0.5, "exclusiveMinimum": true,
        "maxLength": 0, "minLength": 1, "pattern": "^w", "maxItems": 3, "minItems": 0,
        "uniqueItems": true, "multipleOf": 0.25, "enum": [{"size": 1}, "x", 2, null],
        "maxProperties": 9, "minProperties": 0, "required": ["spec"],
        "items": {"type": "string"},
        "allOf": [{"type": "object"}], "oneOf": [{"required": ["a"]}],
        "anyOf": [{"required": ["b"]}], "not": {"type": "string"},
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        "additionalProperties": false,
        "patternProperties": {"^x-": {"type": "string"}},
        "dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}},
        "additionalItems": {"type": "integer"},
        "definitions": {"w": {"type": "object"}},
        "externalDocs": {"description": "docs", "url": "https://example.com"},
        "example": {"size": 2}, "nullable": true,
        "x-kubernetes-preserve-unknown-fields": false, "x-kubernetes-embedded-resource": true,
        "x-kubernetes-int-or-string": true, "x-kubernetes-list-map-keys": ["name"],
        "x-kubernetes-list-type": "map", "x-kubernetes-map-type": "atomic",
        "x-kubernetes-validations": [{
            "rule": "self.size >= 0", "message": "size", "messageExpression": "'size'",
            "reason": "FieldValueInvalid", "fieldPath": ".size", "optionalOldSelf": false
        }]
    }"##,
    )
    .unwrap()
}

fn crd(name: &str) -> Value {
    typed(
        V1,
        "CustomResourceDefinition",
        json!({
            "metadata": object_meta(name),
            "spec": {
                "group": "example.com",
                "names": {"plural": "widgets", "singular": "widget", "shortNames": ["wd"],
                          "kind": "Widget", "listKind": "WidgetList", "categories": ["all"]},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "storage": true, "deprecated": true,
                    "deprecationWarning": "use v2",
                    "schema": {"openAPIV3Schema": full_schema()},
                    "subresources": {
                        "status": {},
                        "scale": {"specReplicasPath": ".spec.replicas",
                                  "statusReplicasPath": ".status.replicas",
                                  "labelSelectorPath": ".status.selector"}
                    },
                    "additionalPrinterColumns": [{
                        "name": "Size", "type": "integer", "format": "int32",
                        "description": "size", "priority": 1, "jsonPath": ".spec.size"
                    }],
                    "selectableFields": [{"jsonPath": ".spec.color"}]
                }],
                "conversion": {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": {
                            "url": "https://convert.example.com/",
                            "service": {"namespace": "ns", "name": "svc", "path": "/c", "port": 443},
                            "caBundle": "Q0E="
                        },
                        "conversionReviewVersions": ["v1"]
                    }
                },
                "preserveUnknownFields": true
            },
            "status": {
                "conditions": [{
                    "type": "Established", "status": "True", "lastTransitionTime": TIME,
                    "reason": "InitialNamesAccepted", "message": "ok", "observedGeneration": 2
                }],
                "acceptedNames": {"plural": "widgets", "singular": "widget",
                                  "shortNames": ["wd"], "kind": "Widget",
                                  "listKind": "WidgetList", "categories": ["all"]},
                "storedVersions": ["v1"],
                "observedGeneration": 2
            }
        }),
    )
}

/// The schema types nested below the top-level schema are left partly unset on purpose.
fn nested(path: &str) -> bool {
    const SCHEMA: &str = "spec.versions[0].schema.openAPIV3Schema";
    path.strip_prefix(SCHEMA)
        .and_then(|rest| rest.strip_prefix('.'))
        .is_some_and(|field| {
            [
                "items",
                "allOf[",
                "oneOf[",
                "anyOf[",
                "not",
                "properties[",
                "patternProperties[",
                "dependencies[",
                "additionalItems",
                "definitions[",
            ]
            .iter()
            .any(|container| field.starts_with(container) && field.len() > container.len())
        })
}

#[test]
fn a_definition_with_every_field_round_trips() {
    for obj in with_lists(vec![crd("widgets.example.com")]) {
        let kind = obj["kind"].as_str().unwrap();
        assert!(supports(V1, kind), "{kind}");
        let unset: Vec<String> = (codec(V1, kind).unwrap().unset_fields)(&obj)
            .into_iter()
            .map(|p| p.trim_start_matches("items[0].").to_owned())
            .filter(|p| !nested(p))
            .collect();
        assert!(unset.is_empty(), "{kind} fixture leaves unset: {unset:?}");
        assert_eq!(decode(&encoded(&obj)).expect("decodes"), obj, "{kind}");
    }
}

#[test]
fn either_or_schemas_take_each_of_their_forms() {
    let schema = |extra: Value| {
        let mut obj = crd("w.example.com");
        obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = extra;
        obj
    };
    for form in [
        json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}),
        json!({"type": "object", "additionalProperties": true}),
        json!({"type": "object", "additionalProperties": {"type": "string"}}),
        json!({"dependencies": {"a": {"required": ["b"]}}}),
        json!({"type": "number", "maximum": 1.5, "minimum": -3, "multipleOf": 1e-3}),
    ] {
        let obj = schema(form.clone());
        assert_eq!(decode(&encoded(&obj)).unwrap(), obj, "{form}");
    }
    // On the wire, `additionalProperties: false` is a message that does not allow.
    let message: apiextensions::CustomResourceDefinition = read_as(&schema(json!({
        "type": "object", "additionalProperties": false
    })));
    let top = message.spec.unwrap().versions[0]
        .schema
        .clone()
        .unwrap()
        .open_apiv3_schema
        .unwrap();
    let additional = top.additional_properties.unwrap();
    assert_eq!((additional.allows, additional.schema), (Some(false), None));
}

/// The bytes client-go's apiextensions clientset sends for a CRD create (Go's generated
/// marshalling writes every non-pointer field, empty or not) decode to what kube-apiserver
/// reads from them.
#[test]
fn a_definition_as_client_go_writes_it_decodes() {
    let string = |s: &str| apiextensions::JsonSchemaProps {
        r#type: Some(s.into()),
        ..Default::default()
    };
    let mut properties = std::collections::BTreeMap::new();
    properties.insert(
        "size".to_owned(),
        apiextensions::JsonSchemaProps {
            r#type: Some("integer".into()),
            default: Some(apiextensions::Json {
                raw: Some(b"3".to_vec()),
            }),
            maximum: Some(10.0),
            ..Default::default()
        },
    );
    properties.insert(
        "tags".to_owned(),
        apiextensions::JsonSchemaProps {
            r#type: Some("array".into()),
            items: Some(Box::new(apiextensions::JsonSchemaPropsOrArray {
                schema: Some(Box::new(string("string"))),
                j_son_schemas: vec![],
            })),
            ..Default::default()
        },
    );
    let message = apiextensions::CustomResourceDefinition {
        metadata: Some(named("widgets.example.com")),
        spec: Some(apiextensions::CustomResourceDefinitionSpec {
            group: Some("example.com".into()),
            names: Some(apiextensions::CustomResourceDefinitionNames {
                plural: Some("widgets".into()),
                singular: Some(String::new()),
                kind: Some("Widget".into()),
                list_kind: Some(String::new()),
                ..Default::default()
            }),
            scope: Some("Namespaced".into()),
            versions: vec![apiextensions::CustomResourceDefinitionVersion {
                name: Some("v1".into()),
                served: Some(true),
                storage: Some(true),
                deprecated: Some(false),
                schema: Some(apiextensions::CustomResourceValidation {
                    open_apiv3_schema: Some(apiextensions::JsonSchemaProps {
                        r#type: Some("object".into()),
                        properties,
                        additional_properties: Some(Box::new(
                            apiextensions::JsonSchemaPropsOrBool {
                                allows: Some(true),
                                schema: Some(Box::new(string("string"))),
                            },
                        )),
                        ..Default::default()
                    }),
                }),
                ..Default::default()
            }],
            conversion: None,
            preserve_unknown_fields: Some(false),
        }),
        status: Some(apiextensions::CustomResourceDefinitionStatus {
            conditions: vec![],
            accepted_names: Some(apiextensions::CustomResourceDefinitionNames {
                plural: Some(String::new()),
                kind: Some(String::new()),
                ..Default::default()
            }),
            stored_versions: vec![],
            observed_generation: Some(0),
        }),
    };
    let got = decoded_from_go(V1, "CustomResourceDefinition", &message);
    assert_eq!(
        got,
        json!({
            "apiVersion": V1, "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"plural": "widgets", "kind": "Widget"},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "size": {"type": "integer", "default": 3, "maximum": 10},
                            "tags": {"type": "array", "items": {"type": "string"}}
                        },
                        "additionalProperties": {"type": "string"}
                    }}
                }]
            },
            "status": {
                "conditions": [], "acceptedNames": {"plural": "", "kind": ""},
                "storedVersions": []
            }
        })
    );
}
