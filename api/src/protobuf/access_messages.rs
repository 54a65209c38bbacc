//! The field lists of the access-control kinds: `rbac.authorization.k8s.io/v1` roles and
//! bindings, `authentication.k8s.io/v1` token requests and reviews, `authorization.k8s.io/v1`
//! access reviews, and the JSON form of their `ExtraValue` (a plain list of strings).
//!
//! Rust field, JSON name, and `(keep)` where Kubernetes' Go type has a pointer or no `omitempty`
//! (see `bridge.rs`), following `rbac/v1`, `authentication/v1` and `authorization/v1` `types.go`
//! in `k8s.io/api`.

use k8s_pb::api::authentication::v1 as authentication;
use k8s_pb::api::authorization::v1 as authorization;
use k8s_pb::api::rbac::v1 as rbac;
use serde_json::Value;

use super::bridge::{bridge_messages, JsonValue};
use super::error::ProtobufError;

// rbac.authorization.k8s.io/v1
bridge_messages! {
    rbac::Role {
        metadata => "metadata",
        rules => "rules" (keep),
    }
    rbac::RoleList {
        metadata => "metadata",
        items => "items" (keep),
    }
    rbac::ClusterRole {
        metadata => "metadata",
        rules => "rules" (keep),
        aggregation_rule => "aggregationRule" (keep),
    }
    rbac::ClusterRoleList {
        metadata => "metadata",
        items => "items" (keep),
    }
    rbac::AggregationRule {
        cluster_role_selectors => "clusterRoleSelectors",
    }
    rbac::PolicyRule {
        verbs => "verbs" (keep),
        api_groups => "apiGroups",
        resources => "resources",
        resource_names => "resourceNames",
        non_resource_ur_ls => "nonResourceURLs",
    }
    rbac::RoleBinding {
        metadata => "metadata",
        subjects => "subjects",
        role_ref => "roleRef",
    }
    rbac::RoleBindingList {
        metadata => "metadata",
        items => "items" (keep),
    }
    rbac::ClusterRoleBinding {
        metadata => "metadata",
        subjects => "subjects",
        role_ref => "roleRef",
    }
    rbac::ClusterRoleBindingList {
        metadata => "metadata",
        items => "items" (keep),
    }
    rbac::Subject {
        kind => "kind" (keep),
        api_group => "apiGroup",
        name => "name" (keep),
        namespace => "namespace",
    }
    rbac::RoleRef {
        api_group => "apiGroup" (keep),
        kind => "kind" (keep),
        name => "name" (keep),
    }
}

// authentication.k8s.io/v1
bridge_messages! {
    authentication::TokenRequest {
        metadata => "metadata",
        spec => "spec",
        status => "status",
    }
    authentication::TokenRequestSpec {
        audiences => "audiences" (keep),
        expiration_seconds => "expirationSeconds" (keep),
        bound_object_ref => "boundObjectRef" (keep),
    }
    authentication::BoundObjectReference {
        kind => "kind",
        api_version => "apiVersion",
        name => "name",
        u_id => "uid",
    }
    authentication::TokenRequestStatus {
        token => "token" (keep),
        expiration_timestamp => "expirationTimestamp" (keep),
    }
    authentication::TokenReview {
        metadata => "metadata",
        spec => "spec",
        status => "status",
    }
    authentication::TokenReviewSpec {
        token => "token",
        audiences => "audiences",
    }
    authentication::TokenReviewStatus {
        authenticated => "authenticated",
        user => "user",
        audiences => "audiences",
        error => "error",
    }
    authentication::SelfSubjectReview {
        metadata => "metadata",
        status => "status",
    }
    authentication::SelfSubjectReviewStatus {
        user_info => "userInfo",
    }
    authentication::UserInfo {
        username => "username",
        uid => "uid",
        groups => "groups",
        extra => "extra",
    }
}

// authorization.k8s.io/v1
bridge_messages! {
    authorization::SubjectAccessReview {
        metadata => "metadata",
        spec => "spec",
        status => "status",
    }
    authorization::LocalSubjectAccessReview {
        metadata => "metadata",
        spec => "spec",
        status => "status",
    }
    authorization::SubjectAccessReviewSpec {
        resource_attributes => "resourceAttributes" (keep),
        non_resource_attributes => "nonResourceAttributes" (keep),
        user => "user",
        groups => "groups",
        extra => "extra",
        uid => "uid",
    }
    authorization::SelfSubjectAccessReview {
        metadata => "metadata",
        spec => "spec",
        status => "status",
    }
    authorization::SelfSubjectAccessReviewSpec {
        resource_attributes => "resourceAttributes" (keep),
        non_resource_attributes => "nonResourceAttributes" (keep),
    }
    authorization::ResourceAttributes {
        namespace => "namespace",
        verb => "verb",
        group => "group",
        version => "version",
        resource => "resource",
        subresource => "subresource",
        name => "name",
        field_selector => "fieldSelector" (keep),
        label_selector => "labelSelector" (keep),
    }
    authorization::FieldSelectorAttributes {
        raw_selector => "rawSelector",
        requirements => "requirements",
    }
    authorization::LabelSelectorAttributes {
        raw_selector => "rawSelector",
        requirements => "requirements",
    }
    authorization::NonResourceAttributes {
        path => "path",
        verb => "verb",
    }
    authorization::SubjectAccessReviewStatus {
        allowed => "allowed" (keep),
        denied => "denied",
        reason => "reason",
        evaluation_error => "evaluationError",
    }
    authorization::SelfSubjectRulesReview {
        metadata => "metadata",
        spec => "spec",
        status => "status",
    }
    authorization::SelfSubjectRulesReviewSpec {
        namespace => "namespace",
    }
    authorization::SubjectRulesReviewStatus {
        resource_rules => "resourceRules" (keep),
        non_resource_rules => "nonResourceRules" (keep),
        incomplete => "incomplete" (keep),
        evaluation_error => "evaluationError",
    }
    authorization::ResourceRule {
        verbs => "verbs" (keep),
        api_groups => "apiGroups",
        resources => "resources",
        resource_names => "resourceNames",
    }
    authorization::NonResourceRule {
        verbs => "verbs" (keep),
        non_resource_ur_ls => "nonResourceURLs",
    }
}

/// Implements [`JsonValue`] for an `ExtraValue` message: Go's `type ExtraValue []string`, whose
/// JSON is the list itself (`"extra": {"scopes": ["a", "b"]}`) while protobuf wraps it in a
/// message with one repeated `items` field.
macro_rules! extra_value {
    ($($ty:path),*) => {$(
        impl JsonValue for $ty {
            fn to_json(&self) -> Result<Value, ProtobufError> {
                let Self { items } = self;
                items.iter().map(String::to_json).collect::<Result<_, _>>().map(Value::Array)
            }

            fn from_json(value: &Value) -> Result<Self, ProtobufError> {
                let items = value
                    .as_array()
                    .ok_or_else(|| ProtobufError::expected("an array of strings", value))?
                    .iter()
                    .enumerate()
                    .map(|(i, item)| String::from_json(item).map_err(|e| e.at_index(i)))
                    .collect::<Result<_, _>>()?;
                Ok(Self { items })
            }

            #[cfg(test)]
            fn unset_fields(&self, path: &str, out: &mut Vec<String>) {
                if self.items.is_empty() {
                    out.push(path.to_owned());
                }
            }
        }
    )*};
}

extra_value!(authentication::ExtraValue, authorization::ExtraValue);
