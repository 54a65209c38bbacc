//! The field lists of `flowcontrol.apiserver.k8s.io/v1`: FlowSchemas and
//! PriorityLevelConfigurations, their rules, subjects and limits.
//!
//! Rust field, JSON name, and `(keep)` where Kubernetes' Go type has a pointer or no `omitempty`
//! (see `bridge.rs`), following `flowcontrol/v1` `types.go` in `k8s.io/api`.

use k8s_pb::api::flowcontrol::v1 as flowcontrol;

use super::bridge::bridge_messages;

bridge_messages! {
    flowcontrol::FlowSchema {
        metadata => "metadata",
        spec => "spec" (keep),
        status => "status" (keep),
    }
    flowcontrol::FlowSchemaList {
        metadata => "metadata",
        items => "items" (keep),
    }
    flowcontrol::FlowSchemaSpec {
        priority_level_configuration => "priorityLevelConfiguration" (keep),
        matching_precedence => "matchingPrecedence" (keep),
        distinguisher_method => "distinguisherMethod" (keep),
        rules => "rules",
    }
    flowcontrol::PriorityLevelConfigurationReference {
        name => "name" (keep),
    }
    flowcontrol::FlowDistinguisherMethod {
        r#type => "type" (keep),
    }
    flowcontrol::PolicyRulesWithSubjects {
        subjects => "subjects" (keep),
        resource_rules => "resourceRules",
        non_resource_rules => "nonResourceRules",
    }
    flowcontrol::Subject {
        kind => "kind" (keep),
        user => "user" (keep),
        group => "group" (keep),
        service_account => "serviceAccount" (keep),
    }
    flowcontrol::UserSubject {
        name => "name" (keep),
    }
    flowcontrol::GroupSubject {
        name => "name" (keep),
    }
    flowcontrol::ServiceAccountSubject {
        namespace => "namespace" (keep),
        name => "name" (keep),
    }
    flowcontrol::ResourcePolicyRule {
        verbs => "verbs" (keep),
        api_groups => "apiGroups" (keep),
        resources => "resources" (keep),
        cluster_scope => "clusterScope",
        namespaces => "namespaces" (keep),
    }
    flowcontrol::NonResourcePolicyRule {
        verbs => "verbs" (keep),
        non_resource_ur_ls => "nonResourceURLs" (keep),
    }
    flowcontrol::FlowSchemaStatus {
        conditions => "conditions",
    }
    flowcontrol::FlowSchemaCondition {
        r#type => "type",
        status => "status",
        last_transition_time => "lastTransitionTime",
        reason => "reason",
        message => "message",
    }
    flowcontrol::PriorityLevelConfiguration {
        metadata => "metadata",
        spec => "spec" (keep),
        status => "status" (keep),
    }
    flowcontrol::PriorityLevelConfigurationList {
        metadata => "metadata",
        items => "items" (keep),
    }
    flowcontrol::PriorityLevelConfigurationSpec {
        r#type => "type" (keep),
        limited => "limited" (keep),
        exempt => "exempt" (keep),
    }
    flowcontrol::LimitedPriorityLevelConfiguration {
        nominal_concurrency_shares => "nominalConcurrencyShares" (keep),
        limit_response => "limitResponse" (keep),
        lendable_percent => "lendablePercent" (keep),
        borrowing_limit_percent => "borrowingLimitPercent" (keep),
    }
    flowcontrol::ExemptPriorityLevelConfiguration {
        nominal_concurrency_shares => "nominalConcurrencyShares" (keep),
        lendable_percent => "lendablePercent" (keep),
    }
    flowcontrol::LimitResponse {
        r#type => "type" (keep),
        queuing => "queuing" (keep),
    }
    flowcontrol::QueuingConfiguration {
        queues => "queues" (keep),
        hand_size => "handSize" (keep),
        queue_length_limit => "queueLengthLimit" (keep),
    }
    flowcontrol::PriorityLevelConfigurationStatus {
        conditions => "conditions",
    }
    flowcontrol::PriorityLevelConfigurationCondition {
        r#type => "type",
        status => "status",
        last_transition_time => "lastTransitionTime",
        reason => "reason",
        message => "message",
    }
}
