//! The field lists of the service-network kinds: core `v1` Services and Endpoints,
//! `discovery.k8s.io/v1` EndpointSlices, `networking.k8s.io/v1` IPAddresses and
//! `apiregistration.k8s.io/v1` APIServices.
//!
//! Rust field, JSON name, and `(keep)` where Kubernetes' Go type has a pointer or no `omitempty`
//! (see `bridge.rs`), following `core/v1`, `discovery/v1` and `networking/v1` `types.go` in
//! `k8s.io/api` and `pkg/apis/apiregistration/v1/types.go` in `k8s.io/kube-aggregator`. The
//! parts they share with other kinds (`ObjectReference`, `meta.v1.Condition`) are bridged in
//! `messages.rs`.

use k8s_pb::api::core::v1 as core;
use k8s_pb::api::discovery::v1 as discovery;
use k8s_pb::api::networking::v1 as networking;
use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;

use super::bridge::bridge_messages;

// core/v1 Service
bridge_messages! {
    core::Service {
        metadata => "metadata",
        spec => "spec",
        status => "status",
    }
    core::ServiceList {
        metadata => "metadata",
        items => "items" (keep),
    }
    core::ServiceSpec {
        ports => "ports",
        selector => "selector",
        cluster_ip => "clusterIP",
        cluster_ips => "clusterIPs",
        r#type => "type",
        external_ips => "externalIPs",
        session_affinity => "sessionAffinity",
        load_balancer_ip => "loadBalancerIP",
        load_balancer_source_ranges => "loadBalancerSourceRanges",
        external_name => "externalName",
        external_traffic_policy => "externalTrafficPolicy",
        health_check_node_port => "healthCheckNodePort",
        publish_not_ready_addresses => "publishNotReadyAddresses",
        session_affinity_config => "sessionAffinityConfig" (keep),
        ip_families => "ipFamilies",
        ip_family_policy => "ipFamilyPolicy" (keep),
        allocate_load_balancer_node_ports => "allocateLoadBalancerNodePorts" (keep),
        load_balancer_class => "loadBalancerClass" (keep),
        internal_traffic_policy => "internalTrafficPolicy" (keep),
        traffic_distribution => "trafficDistribution" (keep),
    }
    core::ServicePort {
        name => "name",
        protocol => "protocol",
        app_protocol => "appProtocol" (keep),
        port => "port" (keep),
        target_port => "targetPort",
        node_port => "nodePort",
    }
    core::SessionAffinityConfig {
        client_ip => "clientIP" (keep),
    }
    core::ClientIpConfig {
        timeout_seconds => "timeoutSeconds" (keep),
    }
    core::ServiceStatus {
        load_balancer => "loadBalancer",
        conditions => "conditions",
    }
    core::LoadBalancerStatus {
        ingress => "ingress",
    }
    core::LoadBalancerIngress {
        ip => "ip",
        hostname => "hostname",
        ip_mode => "ipMode" (keep),
        ports => "ports",
    }
    core::PortStatus {
        port => "port" (keep),
        protocol => "protocol" (keep),
        error => "error" (keep),
    }
}

// core/v1 Endpoints
bridge_messages! {
    core::Endpoints {
        metadata => "metadata",
        subsets => "subsets",
    }
    core::EndpointsList {
        metadata => "metadata",
        items => "items" (keep),
    }
    core::EndpointSubset {
        addresses => "addresses",
        not_ready_addresses => "notReadyAddresses",
        ports => "ports",
    }
    core::EndpointAddress {
        ip => "ip" (keep),
        hostname => "hostname",
        node_name => "nodeName" (keep),
        target_ref => "targetRef" (keep),
    }
    core::EndpointPort {
        name => "name",
        port => "port" (keep),
        protocol => "protocol",
        app_protocol => "appProtocol" (keep),
    }
}

// discovery.k8s.io/v1
bridge_messages! {
    discovery::EndpointSlice {
        metadata => "metadata",
        address_type => "addressType" (keep),
        endpoints => "endpoints" (keep),
        ports => "ports" (keep),
    }
    discovery::EndpointSliceList {
        metadata => "metadata",
        items => "items" (keep),
    }
    discovery::Endpoint {
        addresses => "addresses" (keep),
        conditions => "conditions",
        hostname => "hostname" (keep),
        target_ref => "targetRef" (keep),
        deprecated_topology => "deprecatedTopology",
        node_name => "nodeName" (keep),
        zone => "zone" (keep),
        hints => "hints" (keep),
    }
    discovery::EndpointConditions {
        ready => "ready" (keep),
        serving => "serving" (keep),
        terminating => "terminating" (keep),
    }
    discovery::EndpointHints {
        for_zones => "forZones",
        for_nodes => "forNodes",
    }
    discovery::ForZone {
        name => "name" (keep),
    }
    discovery::ForNode {
        name => "name" (keep),
    }
    discovery::EndpointPort {
        name => "name" (keep),
        protocol => "protocol" (keep),
        port => "port" (keep),
        app_protocol => "appProtocol" (keep),
    }
}

// networking.k8s.io/v1
bridge_messages! {
    networking::IPAddress {
        metadata => "metadata",
        spec => "spec",
    }
    networking::IPAddressList {
        metadata => "metadata",
        items => "items" (keep),
    }
    networking::IPAddressSpec {
        parent_ref => "parentRef" (keep),
    }
    networking::ParentReference {
        group => "group",
        resource => "resource",
        namespace => "namespace",
        name => "name",
    }
}

// apiregistration.k8s.io/v1
bridge_messages! {
    apiregistration::APIService {
        metadata => "metadata",
        spec => "spec",
        status => "status",
    }
    apiregistration::APIServiceList {
        metadata => "metadata",
        items => "items" (keep),
    }
    apiregistration::APIServiceSpec {
        service => "service" (keep),
        group => "group",
        version => "version",
        insecure_skip_tls_verify => "insecureSkipTLSVerify",
        ca_bundle => "caBundle",
        group_priority_minimum => "groupPriorityMinimum" (keep),
        version_priority => "versionPriority" (keep),
    }
    apiregistration::ServiceReference {
        namespace => "namespace",
        name => "name",
        port => "port" (keep),
    }
    apiregistration::APIServiceStatus {
        conditions => "conditions",
    }
    apiregistration::APIServiceCondition {
        r#type => "type" (keep),
        status => "status" (keep),
        last_transition_time => "lastTransitionTime",
        reason => "reason",
        message => "message",
    }
}
