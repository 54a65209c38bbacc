//! The field lists of the admission kinds: `admissionregistration.k8s.io/v1` webhook
//! configurations, ValidatingAdmissionPolicies and their bindings, and the `v1beta1`
//! MutatingAdmissionPolicies and their bindings.
//!
//! Rust field, JSON name, and `(keep)` where Kubernetes' Go type has a pointer or no `omitempty`
//! (see `bridge.rs`), following `admissionregistration/v1` and `v1beta1` `types.go` in
//! `k8s.io/api`; `(inline)` where Go embeds a struct inline (`RuleWithOperations` holds `Rule`'s
//! fields, `NamedRuleWithOperations` those of `RuleWithOperations`).

use k8s_pb::api::admissionregistration::{v1, v1beta1};

use super::bridge::bridge_messages;

// Shared by both versions: rules and webhooks' parts.
bridge_messages! {
    v1::Rule {
        api_groups => "apiGroups",
        api_versions => "apiVersions",
        resources => "resources",
        scope => "scope" (keep),
    }
    v1::RuleWithOperations {
        operations => "operations",
        rule => "" (inline),
    }
    v1::NamedRuleWithOperations {
        resource_names => "resourceNames",
        rule_with_operations => "" (inline),
    }
    v1::MatchResources {
        namespace_selector => "namespaceSelector" (keep),
        object_selector => "objectSelector" (keep),
        resource_rules => "resourceRules",
        exclude_resource_rules => "excludeResourceRules",
        match_policy => "matchPolicy" (keep),
    }
    v1::MatchCondition {
        name => "name" (keep),
        expression => "expression" (keep),
    }
    v1::WebhookClientConfig {
        url => "url" (keep),
        service => "service" (keep),
        ca_bundle => "caBundle",
    }
    v1::ServiceReference {
        namespace => "namespace" (keep),
        name => "name" (keep),
        path => "path" (keep),
        port => "port" (keep),
    }
}

// Webhook configurations.
bridge_messages! {
    v1::ValidatingWebhookConfiguration {
        metadata => "metadata",
        webhooks => "webhooks",
    }
    v1::ValidatingWebhookConfigurationList {
        metadata => "metadata",
        items => "items" (keep),
    }
    v1::ValidatingWebhook {
        name => "name" (keep),
        client_config => "clientConfig" (keep),
        rules => "rules",
        failure_policy => "failurePolicy" (keep),
        match_policy => "matchPolicy" (keep),
        namespace_selector => "namespaceSelector" (keep),
        object_selector => "objectSelector" (keep),
        side_effects => "sideEffects" (keep),
        timeout_seconds => "timeoutSeconds" (keep),
        admission_review_versions => "admissionReviewVersions" (keep),
        match_conditions => "matchConditions",
    }
    v1::MutatingWebhookConfiguration {
        metadata => "metadata",
        webhooks => "webhooks",
    }
    v1::MutatingWebhookConfigurationList {
        metadata => "metadata",
        items => "items" (keep),
    }
    v1::MutatingWebhook {
        name => "name" (keep),
        client_config => "clientConfig" (keep),
        rules => "rules",
        failure_policy => "failurePolicy" (keep),
        match_policy => "matchPolicy" (keep),
        namespace_selector => "namespaceSelector" (keep),
        object_selector => "objectSelector" (keep),
        side_effects => "sideEffects" (keep),
        timeout_seconds => "timeoutSeconds" (keep),
        admission_review_versions => "admissionReviewVersions" (keep),
        reinvocation_policy => "reinvocationPolicy" (keep),
        match_conditions => "matchConditions",
    }
}

// ValidatingAdmissionPolicy and its binding.
bridge_messages! {
    v1::ValidatingAdmissionPolicy {
        metadata => "metadata",
        spec => "spec",
        status => "status",
    }
    v1::ValidatingAdmissionPolicyList {
        metadata => "metadata",
        items => "items" (keep),
    }
    v1::ValidatingAdmissionPolicySpec {
        param_kind => "paramKind" (keep),
        match_constraints => "matchConstraints" (keep),
        validations => "validations",
        failure_policy => "failurePolicy" (keep),
        audit_annotations => "auditAnnotations",
        match_conditions => "matchConditions",
        variables => "variables",
    }
    v1::ParamKind {
        api_version => "apiVersion",
        kind => "kind",
    }
    v1::Validation {
        expression => "expression" (keep),
        message => "message",
        reason => "reason" (keep),
        message_expression => "messageExpression",
    }
    v1::AuditAnnotation {
        key => "key" (keep),
        value_expression => "valueExpression" (keep),
    }
    v1::Variable {
        name => "name" (keep),
        expression => "expression" (keep),
    }
    v1::ValidatingAdmissionPolicyStatus {
        observed_generation => "observedGeneration",
        type_checking => "typeChecking" (keep),
        conditions => "conditions",
    }
    v1::TypeChecking {
        expression_warnings => "expressionWarnings",
    }
    v1::ExpressionWarning {
        field_ref => "fieldRef" (keep),
        warning => "warning" (keep),
    }
    v1::ValidatingAdmissionPolicyBinding {
        metadata => "metadata",
        spec => "spec",
    }
    v1::ValidatingAdmissionPolicyBindingList {
        metadata => "metadata",
        items => "items" (keep),
    }
    v1::ValidatingAdmissionPolicyBindingSpec {
        policy_name => "policyName",
        param_ref => "paramRef" (keep),
        match_resources => "matchResources" (keep),
        validation_actions => "validationActions",
    }
    v1::ParamRef {
        name => "name",
        namespace => "namespace",
        selector => "selector" (keep),
        parameter_not_found_action => "parameterNotFoundAction" (keep),
    }
}

// MutatingAdmissionPolicy (v1beta1) and its binding, with v1beta1's copies of the shared parts.
bridge_messages! {
    v1beta1::MutatingAdmissionPolicy {
        metadata => "metadata",
        spec => "spec",
    }
    v1beta1::MutatingAdmissionPolicyList {
        metadata => "metadata",
        items => "items" (keep),
    }
    v1beta1::MutatingAdmissionPolicySpec {
        param_kind => "paramKind" (keep),
        match_constraints => "matchConstraints" (keep),
        variables => "variables",
        mutations => "mutations",
        failure_policy => "failurePolicy" (keep),
        match_conditions => "matchConditions",
        reinvocation_policy => "reinvocationPolicy",
    }
    v1beta1::Mutation {
        patch_type => "patchType" (keep),
        apply_configuration => "applyConfiguration" (keep),
        json_patch => "jsonPatch" (keep),
    }
    v1beta1::ApplyConfiguration {
        expression => "expression",
    }
    v1beta1::JsonPatch {
        expression => "expression",
    }
    v1beta1::MutatingAdmissionPolicyBinding {
        metadata => "metadata",
        spec => "spec",
    }
    v1beta1::MutatingAdmissionPolicyBindingList {
        metadata => "metadata",
        items => "items" (keep),
    }
    v1beta1::MutatingAdmissionPolicyBindingSpec {
        policy_name => "policyName",
        param_ref => "paramRef" (keep),
        match_resources => "matchResources" (keep),
    }
    v1beta1::MatchResources {
        namespace_selector => "namespaceSelector" (keep),
        object_selector => "objectSelector" (keep),
        resource_rules => "resourceRules",
        exclude_resource_rules => "excludeResourceRules",
        match_policy => "matchPolicy" (keep),
    }
    v1beta1::NamedRuleWithOperations {
        resource_names => "resourceNames",
        rule_with_operations => "" (inline),
    }
    v1beta1::ParamKind {
        api_version => "apiVersion",
        kind => "kind",
    }
    v1beta1::ParamRef {
        name => "name",
        namespace => "namespace",
        selector => "selector" (keep),
        parameter_not_found_action => "parameterNotFoundAction" (keep),
    }
    v1beta1::MatchCondition {
        name => "name" (keep),
        expression => "expression" (keep),
    }
    v1beta1::Variable {
        name => "name" (keep),
        expression => "expression" (keep),
    }
}
