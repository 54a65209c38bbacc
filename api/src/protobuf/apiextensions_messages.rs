//! The field lists of `apiextensions.k8s.io/v1` CustomResourceDefinitions, and the JSON forms
//! of the schema types that are not plain objects: `JSON` (embedded JSON: `default`, `example`,
//! `enum`), `JSONSchemaPropsOrArray`, `JSONSchemaPropsOrBool`, `JSONSchemaPropsOrStringArray`
//! and the schema's numbers (`float64`).
//!
//! Rust field, JSON name, and `(keep)` where Kubernetes' Go type has a pointer or no `omitempty`
//! (see `bridge.rs`), following `apiextensions/v1` `types.go` and `types_jsonschema.go`, and its
//! `marshal.go` for the either-or types: an array or a schema for `items`; `true`, `false` or a
//! schema for `additionalProperties` and `additionalItems`; a list of names or a schema for a
//! dependency.

use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use serde_json::Value;

use super::bridge::{as_object, bridge_messages, JsonValue};
use super::error::ProtobufError;

bridge_messages! {
    apiextensions::CustomResourceDefinition {
        metadata => "metadata",
        spec => "spec" (keep),
        status => "status",
    }
    apiextensions::CustomResourceDefinitionList {
        metadata => "metadata",
        items => "items" (keep),
    }
    apiextensions::CustomResourceDefinitionSpec {
        group => "group" (keep),
        names => "names" (keep),
        scope => "scope" (keep),
        versions => "versions" (keep),
        conversion => "conversion" (keep),
        preserve_unknown_fields => "preserveUnknownFields",
    }
    apiextensions::CustomResourceDefinitionNames {
        plural => "plural" (keep),
        singular => "singular",
        short_names => "shortNames",
        kind => "kind" (keep),
        list_kind => "listKind",
        categories => "categories",
    }
    apiextensions::CustomResourceDefinitionVersion {
        name => "name" (keep),
        served => "served" (keep),
        storage => "storage" (keep),
        deprecated => "deprecated",
        deprecation_warning => "deprecationWarning" (keep),
        schema => "schema" (keep),
        subresources => "subresources" (keep),
        additional_printer_columns => "additionalPrinterColumns",
        selectable_fields => "selectableFields",
    }
    apiextensions::CustomResourceValidation {
        open_apiv3_schema => "openAPIV3Schema" (keep),
    }
    apiextensions::CustomResourceSubresources {
        status => "status" (keep),
        scale => "scale" (keep),
    }
    apiextensions::CustomResourceSubresourceScale {
        spec_replicas_path => "specReplicasPath" (keep),
        status_replicas_path => "statusReplicasPath" (keep),
        label_selector_path => "labelSelectorPath" (keep),
    }
    apiextensions::CustomResourceColumnDefinition {
        name => "name" (keep),
        r#type => "type" (keep),
        format => "format",
        description => "description",
        priority => "priority",
        json_path => "jsonPath" (keep),
    }
    apiextensions::SelectableField {
        json_path => "jsonPath" (keep),
    }
    apiextensions::CustomResourceConversion {
        strategy => "strategy" (keep),
        webhook => "webhook" (keep),
    }
    apiextensions::WebhookConversion {
        client_config => "clientConfig" (keep),
        conversion_review_versions => "conversionReviewVersions" (keep),
    }
    apiextensions::WebhookClientConfig {
        url => "url" (keep),
        service => "service" (keep),
        ca_bundle => "caBundle",
    }
    apiextensions::ServiceReference {
        namespace => "namespace" (keep),
        name => "name" (keep),
        path => "path" (keep),
        port => "port" (keep),
    }
    apiextensions::CustomResourceDefinitionStatus {
        conditions => "conditions" (keep),
        accepted_names => "acceptedNames" (keep),
        stored_versions => "storedVersions" (keep),
        observed_generation => "observedGeneration",
    }
    apiextensions::CustomResourceDefinitionCondition {
        r#type => "type" (keep),
        status => "status" (keep),
        last_transition_time => "lastTransitionTime",
        reason => "reason",
        message => "message",
        observed_generation => "observedGeneration",
    }
    apiextensions::JsonSchemaProps {
        id => "id",
        schema => "$schema",
        r#ref => "$ref" (keep),
        description => "description",
        r#type => "type",
        format => "format",
        title => "title",
        default => "default" (keep),
        maximum => "maximum" (keep),
        exclusive_maximum => "exclusiveMaximum",
        minimum => "minimum" (keep),
        exclusive_minimum => "exclusiveMinimum",
        max_length => "maxLength" (keep),
        min_length => "minLength" (keep),
        pattern => "pattern",
        max_items => "maxItems" (keep),
        min_items => "minItems" (keep),
        unique_items => "uniqueItems",
        multiple_of => "multipleOf" (keep),
        r#enum => "enum",
        max_properties => "maxProperties" (keep),
        min_properties => "minProperties" (keep),
        required => "required",
        items => "items" (keep),
        all_of => "allOf",
        one_of => "oneOf",
        any_of => "anyOf",
        not => "not" (keep),
        properties => "properties",
        additional_properties => "additionalProperties" (keep),
        pattern_properties => "patternProperties",
        dependencies => "dependencies",
        additional_items => "additionalItems" (keep),
        definitions => "definitions",
        external_docs => "externalDocs" (keep),
        example => "example" (keep),
        nullable => "nullable",
        x_kubernetes_preserve_unknown_fields => "x-kubernetes-preserve-unknown-fields" (keep),
        x_kubernetes_embedded_resource => "x-kubernetes-embedded-resource",
        x_kubernetes_int_or_string => "x-kubernetes-int-or-string",
        x_kubernetes_list_map_keys => "x-kubernetes-list-map-keys",
        x_kubernetes_list_type => "x-kubernetes-list-type" (keep),
        x_kubernetes_map_type => "x-kubernetes-map-type" (keep),
        x_kubernetes_validations => "x-kubernetes-validations",
    }
    apiextensions::ValidationRule {
        rule => "rule" (keep),
        message => "message",
        message_expression => "messageExpression",
        reason => "reason" (keep),
        field_path => "fieldPath",
        optional_old_self => "optionalOldSelf" (keep),
    }
    apiextensions::ExternalDocumentation {
        description => "description",
        url => "url",
    }
}

/// A boxed schema (k8s-pb boxes the schema's recursive fields): the schema's own form. (A
/// generic `impl for Box<T>` would overlap the scalars' one: `Box` is fundamental.)
macro_rules! boxed {
    ($($ty:ty),*) => {$(
        impl JsonValue for Box<$ty> {
            fn to_json(&self) -> Result<Value, ProtobufError> {
                (**self).to_json()
            }

            fn from_json(value: &Value) -> Result<Self, ProtobufError> {
                <$ty>::from_json(value).map(Box::new)
            }

            #[cfg(test)]
            fn unset_fields(&self, path: &str, out: &mut Vec<String>) {
                (**self).unset_fields(path, out);
            }
        }
    )*};
}

boxed!(
    apiextensions::JsonSchemaProps,
    apiextensions::JsonSchemaPropsOrArray,
    apiextensions::JsonSchemaPropsOrBool
);

/// `status: {}`: the status subresource is on; the message has no fields.
impl JsonValue for apiextensions::CustomResourceSubresourceStatus {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        Ok(Value::Object(Default::default()))
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        as_object(value).map(|_| Self {})
    }
}

/// Embedded JSON (`default`, `example`, an `enum` value): the message holds its bytes.
impl JsonValue for apiextensions::Json {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        match self.raw.as_deref() {
            None | Some([]) => Ok(Value::Null),
            Some(raw) => serde_json::from_slice(raw)
                .map_err(|e| ProtobufError::invalid(format!("embedded JSON: {e}"))),
        }
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        let raw = serde_json::to_vec(value).map_err(|e| ProtobufError::invalid(e.to_string()))?;
        Ok(Self { raw: Some(raw) })
    }
}

/// A schema's number (`maximum`, `minimum`, `multipleOf`): Go's `float64`, written without a
/// fraction when it has none (`5`, as Go's encoder writes it, not `5.0`).
impl JsonValue for f64 {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
        if self.fract() == 0.0 && self.abs() < EXACT {
            return Ok(Value::from(*self as i64));
        }
        serde_json::Number::from_f64(*self)
            .map(Value::Number)
            .ok_or_else(|| ProtobufError::invalid(format!("{self} is not a JSON number")))
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        value
            .as_f64()
            .ok_or_else(|| ProtobufError::expected("a number", value))
    }

    fn is_zero(&self) -> bool {
        *self == 0.0
    }
}

/// `items`: a list of schemas, one per position, or one schema for every item.
impl JsonValue for apiextensions::JsonSchemaPropsOrArray {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        if !self.j_son_schemas.is_empty() {
            return self.j_son_schemas.to_json();
        }
        self.schema
            .as_deref()
            .map_or(Ok(Value::Null), JsonValue::to_json)
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        Ok(match value {
            Value::Array(_) => Self {
                schema: None,
                j_son_schemas: JsonValue::from_json(value)?,
            },
            _ => Self {
                schema: Some(Box::new(JsonValue::from_json(value)?)),
                j_son_schemas: Vec::new(),
            },
        })
    }

    #[cfg(test)]
    fn unset_fields(&self, path: &str, out: &mut Vec<String>) {
        match &self.schema {
            Some(schema) => schema.unset_fields(path, out),
            None => self.j_son_schemas.unset_fields(path, out),
        }
    }
}

/// `additionalProperties`, `additionalItems`: `true`, `false`, or a schema (which allows).
impl JsonValue for apiextensions::JsonSchemaPropsOrBool {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        match &self.schema {
            Some(schema) => schema.to_json(),
            None => Ok(Value::Bool(self.allows.unwrap_or(false))),
        }
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        Ok(match value {
            Value::Bool(allows) => Self {
                allows: Some(*allows),
                schema: None,
            },
            _ => Self {
                allows: Some(true),
                schema: Some(Box::new(JsonValue::from_json(value)?)),
            },
        })
    }

    #[cfg(test)]
    fn unset_fields(&self, path: &str, out: &mut Vec<String>) {
        if let Some(schema) = &self.schema {
            schema.unset_fields(path, out);
        }
    }
}

/// A dependency: the names of the properties it requires, or a schema.
impl JsonValue for apiextensions::JsonSchemaPropsOrStringArray {
    fn to_json(&self) -> Result<Value, ProtobufError> {
        if !self.property.is_empty() {
            return self.property.to_json();
        }
        self.schema
            .as_ref()
            .map_or(Ok(Value::Null), JsonValue::to_json)
    }

    fn from_json(value: &Value) -> Result<Self, ProtobufError> {
        Ok(match value {
            Value::Array(_) => Self {
                schema: None,
                property: JsonValue::from_json(value)?,
            },
            _ => Self {
                schema: Some(JsonValue::from_json(value)?),
                property: Vec::new(),
            },
        })
    }

    #[cfg(test)]
    fn unset_fields(&self, path: &str, out: &mut Vec<String>) {
        match &self.schema {
            Some(schema) => schema.unset_fields(path, out),
            None => self.property.unset_fields(path, out),
        }
    }
}
