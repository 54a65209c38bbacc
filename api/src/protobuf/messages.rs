//! The field lists of the bridged k8s-pb messages of apimachinery and the core, events and
//! coordination kinds (the access-control kinds' are in `access_messages.rs`): Rust field, JSON
//! name, and `(keep)` where Kubernetes' Go type has a pointer or no `omitempty` (see `bridge.rs`
//! for what that means).
//!
//! The Go types these follow are `k8s.io/apimachinery/pkg/apis/meta/v1/types.go`,
//! `k8s.io/apimachinery/pkg/runtime/types.go`, and `core/v1`, `events/v1` and
//! `coordination/v1` `types.go` in `k8s.io/api`.

use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::events::v1 as events;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime;

use super::bridge::bridge_messages;

// meta.k8s.io/v1
bridge_messages! {
    meta::ObjectMeta {
        name => "name",
        generate_name => "generateName",
        namespace => "namespace",
        self_link => "selfLink",
        uid => "uid",
        resource_version => "resourceVersion",
        generation => "generation",
        creation_timestamp => "creationTimestamp",
        deletion_timestamp => "deletionTimestamp" (keep),
        deletion_grace_period_seconds => "deletionGracePeriodSeconds" (keep),
        labels => "labels",
        annotations => "annotations",
        owner_references => "ownerReferences",
        finalizers => "finalizers",
        managed_fields => "managedFields",
    }
    meta::ListMeta {
        self_link => "selfLink",
        resource_version => "resourceVersion",
        r#continue => "continue",
        remaining_item_count => "remainingItemCount" (keep),
    }
    meta::OwnerReference {
        api_version => "apiVersion",
        kind => "kind",
        name => "name",
        uid => "uid",
        controller => "controller" (keep),
        block_owner_deletion => "blockOwnerDeletion" (keep),
    }
    meta::ManagedFieldsEntry {
        manager => "manager",
        operation => "operation",
        api_version => "apiVersion",
        time => "time" (keep),
        fields_type => "fieldsType",
        fields_v1 => "fieldsV1" (keep),
        subresource => "subresource",
    }
    meta::Status {
        metadata => "metadata",
        status => "status",
        message => "message",
        reason => "reason",
        details => "details" (keep),
        code => "code",
    }
    meta::StatusDetails {
        name => "name",
        group => "group",
        kind => "kind",
        uid => "uid",
        causes => "causes",
        retry_after_seconds => "retryAfterSeconds",
    }
    meta::StatusCause {
        reason => "reason",
        message => "message",
        field => "field",
    }
    meta::WatchEvent {
        r#type => "type" (keep),
        object => "object" (keep),
    }
    meta::DeleteOptions {
        grace_period_seconds => "gracePeriodSeconds" (keep),
        preconditions => "preconditions" (keep),
        orphan_dependents => "orphanDependents" (keep),
        propagation_policy => "propagationPolicy" (keep),
        dry_run => "dryRun",
        ignore_store_read_error_with_cluster_breaking_potential
            => "ignoreStoreReadErrorWithClusterBreakingPotential" (keep),
    }
    meta::Preconditions {
        uid => "uid" (keep),
        resource_version => "resourceVersion" (keep),
    }
    meta::LabelSelector {
        match_labels => "matchLabels",
        match_expressions => "matchExpressions",
    }
    meta::LabelSelectorRequirement {
        key => "key" (keep),
        operator => "operator" (keep),
        values => "values",
    }
    meta::FieldSelectorRequirement {
        key => "key" (keep),
        operator => "operator" (keep),
        values => "values",
    }
    meta::Condition {
        r#type => "type" (keep),
        status => "status" (keep),
        observed_generation => "observedGeneration",
        last_transition_time => "lastTransitionTime" (keep),
        reason => "reason" (keep),
        message => "message" (keep),
    }
}

// runtime: the envelope's parts, in the JSON form of their Go fields.
bridge_messages! {
    runtime::TypeMeta {
        api_version => "apiVersion",
        kind => "kind",
    }
    runtime::Unknown {
        type_meta => "typeMeta",
        raw => "raw",
        content_encoding => "contentEncoding",
        content_type => "contentType",
    }
}

// core/v1
bridge_messages! {
    core::Namespace {
        metadata => "metadata",
        spec => "spec",
        status => "status",
    }
    core::NamespaceSpec {
        finalizers => "finalizers",
    }
    core::NamespaceStatus {
        phase => "phase",
        conditions => "conditions",
    }
    core::NamespaceCondition {
        r#type => "type" (keep),
        status => "status" (keep),
        last_transition_time => "lastTransitionTime",
        reason => "reason",
        message => "message",
    }
    core::NamespaceList {
        metadata => "metadata",
        items => "items" (keep),
    }
    core::ConfigMap {
        metadata => "metadata",
        immutable => "immutable" (keep),
        data => "data",
        binary_data => "binaryData",
    }
    core::ConfigMapList {
        metadata => "metadata",
        items => "items" (keep),
    }
    core::Secret {
        metadata => "metadata",
        immutable => "immutable" (keep),
        data => "data",
        string_data => "stringData",
        r#type => "type",
    }
    core::SecretList {
        metadata => "metadata",
        items => "items" (keep),
    }
    core::ResourceQuota {
        metadata => "metadata",
        spec => "spec",
        status => "status",
    }
    core::ResourceQuotaList {
        metadata => "metadata",
        items => "items" (keep),
    }
    core::ResourceQuotaSpec {
        hard => "hard",
        scopes => "scopes",
        scope_selector => "scopeSelector" (keep),
    }
    core::ScopeSelector {
        match_expressions => "matchExpressions",
    }
    core::ScopedResourceSelectorRequirement {
        scope_name => "scopeName" (keep),
        operator => "operator" (keep),
        values => "values",
    }
    core::ResourceQuotaStatus {
        hard => "hard",
        used => "used",
    }
    core::ServiceAccount {
        metadata => "metadata",
        secrets => "secrets",
        image_pull_secrets => "imagePullSecrets",
        automount_service_account_token => "automountServiceAccountToken" (keep),
    }
    core::ServiceAccountList {
        metadata => "metadata",
        items => "items" (keep),
    }
    core::ObjectReference {
        kind => "kind",
        namespace => "namespace",
        name => "name",
        uid => "uid",
        api_version => "apiVersion",
        resource_version => "resourceVersion",
        field_path => "fieldPath",
    }
    core::LocalObjectReference {
        name => "name",
    }
    core::Event {
        metadata => "metadata",
        involved_object => "involvedObject",
        reason => "reason",
        message => "message",
        source => "source",
        first_timestamp => "firstTimestamp",
        last_timestamp => "lastTimestamp",
        count => "count",
        r#type => "type",
        event_time => "eventTime",
        series => "series" (keep),
        action => "action",
        related => "related" (keep),
        reporting_component => "reportingComponent" (keep),
        reporting_instance => "reportingInstance" (keep),
    }
    core::EventList {
        metadata => "metadata",
        items => "items" (keep),
    }
    core::EventSource {
        component => "component",
        host => "host",
    }
    core::EventSeries {
        count => "count",
        last_observed_time => "lastObservedTime",
    }
}

// events.k8s.io/v1
bridge_messages! {
    events::Event {
        metadata => "metadata",
        event_time => "eventTime" (keep),
        series => "series" (keep),
        reporting_controller => "reportingController",
        reporting_instance => "reportingInstance",
        action => "action",
        reason => "reason",
        regarding => "regarding",
        related => "related" (keep),
        note => "note",
        r#type => "type",
        deprecated_source => "deprecatedSource",
        deprecated_first_timestamp => "deprecatedFirstTimestamp",
        deprecated_last_timestamp => "deprecatedLastTimestamp",
        deprecated_count => "deprecatedCount",
    }
    events::EventList {
        metadata => "metadata",
        items => "items" (keep),
    }
    events::EventSeries {
        count => "count" (keep),
        last_observed_time => "lastObservedTime" (keep),
    }
}

// coordination.k8s.io/v1
bridge_messages! {
    coordination::Lease {
        metadata => "metadata",
        spec => "spec",
    }
    coordination::LeaseList {
        metadata => "metadata",
        items => "items" (keep),
    }
    coordination::LeaseSpec {
        holder_identity => "holderIdentity" (keep),
        lease_duration_seconds => "leaseDurationSeconds" (keep),
        acquire_time => "acquireTime" (keep),
        renew_time => "renewTime" (keep),
        lease_transitions => "leaseTransitions" (keep),
        strategy => "strategy" (keep),
        preferred_holder => "preferredHolder" (keep),
    }
}
