//! The protobuf form of `/openapi/v2`, which kubectl and client-go's `OpenAPISchema` ask for
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`): the Swagger document's JSON
//! converted into gnostic's `openapi.v2.Document` messages. kubectl reads it to learn which
//! kinds take server-side field validation and to validate the others itself; a kind it does not
//! find there is left for the server to refuse (Kubernetes' "no matches for kind").
//!
//! Only the messages and fields the document uses are declared (`host/proto/openapi_v2.proto`);
//! their numbers are gnostic's.
//! Values the schema holds as JSON (defaults, enums, extensions) travel as YAML text, as gnostic
//! carries them (JSON is YAML).

use prost::Message as _;
use serde_json::{Map, Value};

mod messages;
use messages as pb;

/// The media type kubectl asks for (an `@` Go's MIME parser refuses in a Content-Type)...
const REQUESTED_MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// ... and the one the answer carries, as Kubernetes answers (also accepted when asked for).
pub(crate) const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The forms of `/openapi/v2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// Swagger 2.0 JSON (no `Accept`, or one that takes JSON first).
    Json,
    /// gnostic's protobuf.
    Protobuf,
}

/// The form a client with this `Accept` header takes first; `None` when it takes neither.
pub(crate) fn negotiate(accept: Option<&str>) -> Option<Form> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Some(Form::Json);
    };
    accept.split(',').find_map(|entry| {
        let media = entry
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "application/json" | "application/*" | "*/*" => Some(Form::Json),
            REQUESTED_MEDIA_TYPE | MEDIA_TYPE => Some(Form::Protobuf),
            _ => None,
        }
    })
}

/// The Swagger 2.0 document `doc` (as `/openapi/v2` serves it in JSON), encoded.
pub(crate) fn encode(doc: &Value) -> Vec<u8> {
    let document = pb::Document {
        swagger: str_of(doc, "swagger"),
        info: doc.get("info").map(|i| pb::Info {
            title: str_of(i, "title"),
            version: str_of(i, "version"),
        }),
        paths: Some(pb::Paths {
            path: entries(doc.get("paths"))
                .map(|(name, item)| pb::NamedPathItem {
                    name: name.clone(),
                    value: Some(path_item(item)),
                })
                .collect(),
        }),
        definitions: Some(pb::Definitions {
            additional_properties: named_schemas(doc.get("definitions")),
        }),
    };
    document.encode_to_vec()
}

fn str_of(v: &Value, field: &str) -> String {
    v.get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn strings(v: &Value, field: &str) -> Vec<String> {
    v.get(field)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn entries(v: Option<&Value>) -> impl Iterator<Item = (&String, &Value)> {
    v.and_then(Value::as_object).into_iter().flat_map(Map::iter)
}

/// A JSON value as gnostic's `Any` (YAML text).
fn any(v: &Value) -> pb::Any {
    pb::Any {
        yaml: v.to_string(),
    }
}

/// The `x-` fields of an object, in order.
fn extensions(v: &Value) -> Vec<pb::NamedAny> {
    entries(Some(v))
        .filter(|(k, _)| k.starts_with("x-"))
        .map(|(k, v)| pb::NamedAny {
            name: k.clone(),
            value: Some(any(v)),
        })
        .collect()
}

fn named_schemas(v: Option<&Value>) -> Vec<pb::NamedSchema> {
    entries(v)
        .map(|(name, s)| pb::NamedSchema {
            name: name.clone(),
            value: Some(schema(s)),
        })
        .collect()
}

fn schema(s: &Value) -> pb::Schema {
    let f64_of = |field| s.get(field).and_then(Value::as_f64).unwrap_or_default();
    let i64_of = |field| s.get(field).and_then(Value::as_i64).unwrap_or_default();
    let types = match s.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => Vec::new(),
    };
    pb::Schema {
        r#ref: str_of(s, "$ref"),
        format: str_of(s, "format"),
        title: str_of(s, "title"),
        description: str_of(s, "description"),
        default: s.get("default").map(any),
        multiple_of: f64_of("multipleOf"),
        maximum: f64_of("maximum"),
        exclusive_maximum: s.get("exclusiveMaximum") == Some(&Value::Bool(true)),
        minimum: f64_of("minimum"),
        exclusive_minimum: s.get("exclusiveMinimum") == Some(&Value::Bool(true)),
        max_length: i64_of("maxLength"),
        min_length: i64_of("minLength"),
        pattern: str_of(s, "pattern"),
        max_items: i64_of("maxItems"),
        min_items: i64_of("minItems"),
        unique_items: s.get("uniqueItems") == Some(&Value::Bool(true)),
        max_properties: i64_of("maxProperties"),
        min_properties: i64_of("minProperties"),
        required: strings(s, "required"),
        r#enum: s
            .get("enum")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(any).collect())
            .unwrap_or_default(),
        additional_properties: s.get("additionalProperties").map(|a| {
            Box::new(pb::AdditionalPropertiesItem {
                oneof: Some(match a {
                    Value::Bool(b) => pb::additional_properties_item::Oneof::Boolean(*b),
                    other => pb::additional_properties_item::Oneof::Schema(Box::new(schema(other))),
                }),
            })
        }),
        r#type: (!types.is_empty()).then_some(pb::TypeItem { value: types }),
        items: s.get("items").map(|i| pb::ItemsItem {
            schema: match i {
                Value::Array(a) => a.iter().map(schema).collect(),
                one => vec![schema(one)],
            },
        }),
        all_of: s
            .get("allOf")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(schema).collect())
            .unwrap_or_default(),
        properties: s.get("properties").map(|p| pb::Properties {
            additional_properties: named_schemas(Some(p)),
        }),
        read_only: s.get("readOnly") == Some(&Value::Bool(true)),
        vendor_extension: extensions(s),
    }
}

fn path_item(item: &Value) -> pb::PathItem {
    let op = |verb: &str| item.get(verb).map(operation);
    pb::PathItem {
        get: op("get"),
        put: op("put"),
        post: op("post"),
        delete: op("delete"),
        patch: op("patch"),
        parameters: parameters(item),
        vendor_extension: extensions(item),
    }
}

fn operation(op: &Value) -> pb::Operation {
    pb::Operation {
        tags: strings(op, "tags"),
        description: str_of(op, "description"),
        operation_id: str_of(op, "operationId"),
        produces: strings(op, "produces"),
        consumes: strings(op, "consumes"),
        parameters: parameters(op),
        responses: Some(pb::Responses {
            response_code: entries(op.get("responses"))
                .map(|(code, r)| pb::NamedResponseValue {
                    name: code.clone(),
                    value: Some(pb::ResponseValue {
                        response: Some(pb::Response {
                            description: str_of(r, "description"),
                            schema: r.get("schema").map(|s| pb::SchemaItem {
                                schema: Some(schema(s)),
                            }),
                        }),
                    }),
                })
                .collect(),
        }),
        vendor_extension: extensions(op),
    }
}

fn parameters(v: &Value) -> Vec<pb::ParametersItem> {
    let Some(list) = v.get("parameters").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter().map(parameter).collect()
}

fn parameter(p: &Value) -> pb::ParametersItem {
    use pb::non_body_parameter::Oneof as NonBody;
    use pb::parameter::Oneof as Kind;
    let (name, description, required) = (
        str_of(p, "name"),
        str_of(p, "description"),
        p.get("required") == Some(&Value::Bool(true)),
    );
    // A path or query parameter: two messages of the same fields.
    macro_rules! non_body {
        ($schema:ident, $in:literal) => {
            Kind::NonBodyParameter(pb::NonBodyParameter {
                oneof: Some(NonBody::$schema(pb::$schema {
                    required,
                    r#in: $in.into(),
                    description,
                    name,
                    r#type: str_of(p, "type"),
                })),
            })
        };
    }
    let kind = match p.get("in").and_then(Value::as_str).unwrap_or_default() {
        "body" => Kind::BodyParameter(pb::BodyParameter {
            description,
            name,
            r#in: "body".into(),
            required,
            schema: p.get("schema").map(schema),
        }),
        "path" => non_body!(PathParameterSubSchema, "path"),
        _ => non_body!(QueryParameterSubSchema, "query"),
    };
    pb::ParametersItem {
        parameter: Some(pb::Parameter { oneof: Some(kind) }),
    }
}

#[cfg(test)]
mod tests {
    use prost::Message as _;
    use serde_json::json;

    use super::*;

    #[test]
    fn kubectl_takes_protobuf_and_curl_json() {
        assert_eq!(negotiate(Some(REQUESTED_MEDIA_TYPE)), Some(Form::Protobuf));
        assert_eq!(negotiate(Some(MEDIA_TYPE)), Some(Form::Protobuf));
        for accept in [None, Some(""), Some("*/*"), Some("application/json")] {
            assert_eq!(negotiate(accept), Some(Form::Json), "{accept:?}");
        }
        let json_first =
            "application/json, application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        assert_eq!(negotiate(Some(json_first)), Some(Form::Json));
        assert_eq!(negotiate(Some("text/html")), None);
    }

    #[test]
    fn a_document_round_trips_its_kinds_and_schemas() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Strategy Host", "version": "0.1.0"},
            "paths": {"/apis/example.com/v1/widgets/{name}": {
                "patch": {"operationId": "patchWidget",
                    "parameters": [{"name": "fieldValidation", "in": "query", "type": "string"}],
                    "responses": {"200": {"description": "OK"}},
                    "x-kubernetes-group-version-kind": {"group": "example.com", "version": "v1", "kind": "Widget"}},
                "parameters": [{"name": "name", "in": "path", "required": true, "type": "string"}]}},
            "definitions": {"com.example.v1.Widget": {
                "type": "object", "required": ["spec"],
                "properties": {"spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "minimum": 1, "default": 3},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}},
                "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}]}},
        });
        let decoded = pb::Document::decode(encode(&doc).as_slice()).unwrap();
        assert_eq!(decoded.swagger, "2.0");
        let widget = &decoded.definitions.unwrap().additional_properties[0];
        assert_eq!(widget.name, "com.example.v1.Widget");
        let schema = widget.value.as_ref().unwrap();
        assert_eq!(schema.required, ["spec"]);
        assert_eq!(
            schema.vendor_extension[0].name,
            "x-kubernetes-group-version-kind"
        );
        let gvk: Value =
            serde_json::from_str(&schema.vendor_extension[0].value.as_ref().unwrap().yaml).unwrap();
        assert_eq!(gvk[0]["kind"], "Widget");
        let spec = &schema.properties.as_ref().unwrap().additional_properties[0];
        let fields = &spec
            .value
            .as_ref()
            .unwrap()
            .properties
            .as_ref()
            .unwrap()
            .additional_properties;
        let size = fields.iter().find(|f| f.name == "size").unwrap();
        assert_eq!(size.value.as_ref().unwrap().minimum, 1.0);
        let labels = fields.iter().find(|f| f.name == "labels").unwrap();
        let values = labels
            .value
            .as_ref()
            .unwrap()
            .additional_properties
            .as_ref();
        assert!(matches!(
            values.unwrap().oneof,
            Some(pb::additional_properties_item::Oneof::Schema(_))
        ));
        let path = &decoded.paths.unwrap().path[0];
        let patch = path.value.as_ref().unwrap().patch.as_ref().unwrap();
        assert_eq!(patch.operation_id, "patchWidget");
        assert_eq!(patch.parameters.len(), 1);
    }
}
