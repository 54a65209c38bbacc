//! The service-network kinds (Services, Endpoints, EndpointSlices, IPAddresses, APIServices):
//! fully populated objects of each round-trip, what the codec encodes is what k8s-pb's messages
//! decode, bytes as a Go client writes them decode to Kubernetes' JSON, and zero values are kept
//! or left out as Go's types say.

use std::collections::BTreeMap;

use k8s_pb::api::core::v1 as core;
use k8s_pb::api::discovery::v1 as discovery;
use k8s_pb::api::networking::v1 as networking;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use serde_json::{json, Value};

use super::fixtures::{object_meta, object_reference, typed, TIME};
use super::{
    assert_round_trips_fully_populated, decode, decoded_from_go, encoded, named, read_as, supports,
    with_lists,
};

const DISCOVERY_V1: &str = "discovery.k8s.io/v1";
const NETWORKING_V1: &str = "networking.k8s.io/v1";
const APIREGISTRATION_V1: &str = "apiregistration.k8s.io/v1";

/// A LoadBalancer Service with every field set: one port targets a named container port, the
/// other a number; `allocateLoadBalancerNodePorts` is a pointer kept at `false`.
fn service(name: &str) -> Value {
    typed(
        "v1",
        "Service",
        json!({
            "metadata": object_meta(name),
            "spec": {
                "ports": [
                    {"name": "https", "protocol": "TCP", "appProtocol": "https",
                     "port": 443, "targetPort": "https", "nodePort": 30443},
                    {"name": "dns", "protocol": "UDP", "appProtocol": "dns",
                     "port": 53, "targetPort": 5353, "nodePort": 30053}
                ],
                "selector": {"app": "web"},
                "clusterIP": "10.96.0.10",
                "clusterIPs": ["10.96.0.10", "fd00:10:96::a"],
                "type": "LoadBalancer",
                "externalIPs": ["203.0.113.7"],
                "sessionAffinity": "ClientIP",
                "loadBalancerIP": "198.51.100.1",
                "loadBalancerSourceRanges": ["198.51.100.0/24"],
                "externalName": "web.example.com",
                "externalTrafficPolicy": "Local",
                "healthCheckNodePort": 32000,
                "publishNotReadyAddresses": true,
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
                "ipFamilies": ["IPv4", "IPv6"],
                "ipFamilyPolicy": "PreferDualStack",
                "allocateLoadBalancerNodePorts": false,
                "loadBalancerClass": "example.com/lb",
                "internalTrafficPolicy": "Local",
                "trafficDistribution": "PreferClose"
            },
            "status": {
                "loadBalancer": {"ingress": [{
                    "ip": "198.51.100.1",
                    "hostname": "lb.example.com",
                    "ipMode": "Proxy",
                    "ports": [{"port": 443, "protocol": "TCP", "error": "Pending"}]
                }]},
                "conditions": [{
                    "type": "LoadBalancerReady",
                    "status": "False",
                    "observedGeneration": 3,
                    "lastTransitionTime": TIME,
                    "reason": "Provisioning",
                    "message": "waiting for the cloud"
                }]
            }
        }),
    )
}

fn endpoint_address(ip: &str, pod: &str) -> Value {
    json!({"ip": ip, "hostname": pod, "nodeName": "node-a", "targetRef": object_reference(pod)})
}

fn endpoints(name: &str) -> Value {
    typed(
        "v1",
        "Endpoints",
        json!({
            "metadata": object_meta(name),
            "subsets": [{
                "addresses": [endpoint_address("10.244.1.5", "web-0")],
                "notReadyAddresses": [endpoint_address("10.244.2.6", "web-1")],
                "ports": [{"name": "https", "port": 8443, "protocol": "TCP", "appProtocol": "https"}]
            }]
        }),
    )
}

/// An EndpointSlice endpoint with every field set; its conditions are pointers, kept when
/// `false`.
fn endpoint(ip: &str, pod: &str, ready: bool) -> Value {
    json!({
        "addresses": [ip],
        "conditions": {"ready": ready, "serving": ready, "terminating": !ready},
        "hostname": pod,
        "targetRef": object_reference(pod),
        "deprecatedTopology": {"kubernetes.io/hostname": "node-a"},
        "nodeName": "node-a",
        "zone": "zone-a",
        "hints": {"forZones": [{"name": "zone-a"}], "forNodes": [{"name": "node-a"}]}
    })
}

fn endpoint_slice(name: &str) -> Value {
    typed(
        DISCOVERY_V1,
        "EndpointSlice",
        json!({
            "metadata": object_meta(name),
            "addressType": "IPv4",
            "endpoints": [
                endpoint("10.244.1.5", "web-0", true),
                endpoint("10.244.2.6", "web-1", false)
            ],
            "ports": [{"name": "https", "protocol": "TCP", "port": 8443, "appProtocol": "https"}]
        }),
    )
}

fn ip_address(name: &str) -> Value {
    typed(
        NETWORKING_V1,
        "IPAddress",
        json!({
            "metadata": object_meta(name),
            "spec": {"parentRef": {
                "group": "gateway.networking.k8s.io",
                "resource": "gateways",
                "namespace": "default",
                "name": "web"
            }}
        }),
    )
}

fn api_service(name: &str) -> Value {
    typed(
        APIREGISTRATION_V1,
        "APIService",
        json!({
            "metadata": object_meta(name),
            "spec": {
                "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
                "group": "metrics.k8s.io",
                "version": "v1beta1",
                "insecureSkipTLSVerify": true,
                "caBundle": "Y2EtYnVuZGxl",
                "groupPriorityMinimum": 100,
                "versionPriority": 100
            },
            "status": {"conditions": [{
                "type": "Available",
                "status": "True",
                "lastTransitionTime": TIME,
                "reason": "Passed",
                "message": "all checks passed"
            }]}
        }),
    )
}

/// One of each kind, and a list of each.
fn all() -> Vec<Value> {
    with_lists(vec![
        service("web"),
        endpoints("web"),
        endpoint_slice("web-abcde"),
        ip_address("10.96.0.10"),
        api_service("v1beta1.metrics.k8s.io"),
    ])
}

#[test]
fn every_network_kind_round_trips_fully_populated() {
    assert_round_trips_fully_populated(all());
    assert!(!supports("v1", "EndpointSlice"));
    assert!(!supports("discovery.k8s.io/v1beta1", "EndpointSlice"));
    assert!(!supports("networking.k8s.io/v1beta1", "IPAddress"));
}

#[test]
fn services_and_endpoints_read_by_k8s_pb() {
    let svc: core::Service = read_as(&service("web"));
    let spec = svc.spec.expect("spec");
    assert_eq!(
        spec.ports[0].target_port,
        Some(IntOrString {
            r#type: Some(1),
            int_val: Some(0),
            str_val: Some("https".into())
        })
    );
    let target = spec.ports[1].target_port.as_ref().expect("targetPort");
    assert_eq!((target.r#type, target.int_val), (Some(0), Some(5353)));
    assert_eq!(spec.ports[1].port, Some(53));
    assert_eq!(spec.cluster_ips, ["10.96.0.10", "fd00:10:96::a"]);
    assert_eq!(spec.allocate_load_balancer_node_ports, Some(false));
    let affinity = spec.session_affinity_config.expect("sessionAffinityConfig");
    assert_eq!(affinity.client_ip.unwrap().timeout_seconds, Some(10800));
    let status = svc.status.expect("status");
    let ingress = &status.load_balancer.expect("loadBalancer").ingress[0];
    assert_eq!(ingress.ip_mode.as_deref(), Some("Proxy"));
    assert_eq!(ingress.ports[0].error.as_deref(), Some("Pending"));
    assert_eq!(status.conditions[0].observed_generation, Some(3));

    let eps: core::Endpoints = read_as(&endpoints("web"));
    let subset = &eps.subsets[0];
    let not_ready = &subset.not_ready_addresses[0];
    assert_eq!(not_ready.ip.as_deref(), Some("10.244.2.6"));
    let target_ref = not_ready.target_ref.as_ref().expect("targetRef");
    assert_eq!(target_ref.name.as_deref(), Some("web-1"));
    assert_eq!(subset.ports[0].port, Some(8443));
}

#[test]
fn endpoint_slices_and_ip_addresses_read_by_k8s_pb() {
    let slice: discovery::EndpointSlice = read_as(&endpoint_slice("web-abcde"));
    assert_eq!(slice.address_type.as_deref(), Some("IPv4"));
    let not_ready = &slice.endpoints[1];
    assert_eq!(
        not_ready.conditions,
        Some(discovery::EndpointConditions {
            ready: Some(false),
            serving: Some(false),
            terminating: Some(true),
        })
    );
    let hints = not_ready.hints.as_ref().expect("hints");
    assert_eq!(hints.for_nodes[0].name.as_deref(), Some("node-a"));
    assert_eq!(
        not_ready.deprecated_topology,
        BTreeMap::from([("kubernetes.io/hostname".into(), "node-a".into())])
    );
    assert_eq!(slice.ports[0].port, Some(8443));

    let address: networking::IPAddress = read_as(&ip_address("10.96.0.10"));
    let parent = address.spec.and_then(|s| s.parent_ref).expect("parentRef");
    assert_eq!(parent.resource.as_deref(), Some("gateways"));
}

#[test]
fn api_services_read_by_k8s_pb() {
    let api: apiregistration::APIService = read_as(&api_service("v1beta1.metrics.k8s.io"));
    let spec = api.spec.expect("spec");
    assert_eq!(spec.ca_bundle.as_deref(), Some(&b"ca-bundle"[..]));
    assert_eq!(spec.service.and_then(|s| s.port), Some(443));
    assert_eq!(
        (spec.group_priority_minimum, spec.version_priority),
        (Some(100), Some(100))
    );
    let condition = &api.status.expect("status").conditions[0];
    assert_eq!(condition.r#type.as_deref(), Some("Available"));
}

/// A ClusterIP Service as kube-apiserver writes it (its generated marshaller writes every
/// non-pointer field, `""`, `0` and `false` included, and the empty `loadBalancer` status):
/// Kubernetes' JSON leaves out the `omitempty` zeros and keeps `port` and the empty struct.
#[test]
fn a_service_from_go_decodes_to_kubernetes_json() {
    let svc = core::Service {
        metadata: Some(named("kubernetes")),
        spec: Some(core::ServiceSpec {
            ports: vec![core::ServicePort {
                name: Some("https".into()),
                protocol: Some("TCP".into()),
                app_protocol: None,
                port: Some(443),
                target_port: Some(IntOrString {
                    r#type: Some(0),
                    int_val: Some(6443),
                    str_val: Some(String::new()),
                }),
                node_port: Some(0),
            }],
            selector: BTreeMap::new(),
            cluster_ip: Some("10.96.0.1".into()),
            cluster_ips: vec!["10.96.0.1".into()],
            r#type: Some("ClusterIP".into()),
            external_ips: vec![],
            session_affinity: Some("None".into()),
            load_balancer_ip: Some(String::new()),
            load_balancer_source_ranges: vec![],
            external_name: Some(String::new()),
            external_traffic_policy: Some(String::new()),
            health_check_node_port: Some(0),
            publish_not_ready_addresses: Some(false),
            session_affinity_config: None,
            ip_families: vec!["IPv4".into()],
            ip_family_policy: Some("SingleStack".into()),
            allocate_load_balancer_node_ports: None,
            load_balancer_class: None,
            internal_traffic_policy: Some("Cluster".into()),
            traffic_distribution: None,
        }),
        status: Some(core::ServiceStatus {
            load_balancer: Some(core::LoadBalancerStatus::default()),
            conditions: vec![],
        }),
    };
    assert_eq!(
        decoded_from_go("v1", "Service", &svc),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes"},
            "spec": {
                "ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}],
                "clusterIP": "10.96.0.1",
                "clusterIPs": ["10.96.0.1"],
                "type": "ClusterIP",
                "sessionAffinity": "None",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "internalTrafficPolicy": "Cluster"
            },
            "status": {"loadBalancer": {}}
        })
    );
}

/// An EndpointSlice and an APIService as a Go client writes them: fields without `omitempty`
/// (`addresses`, the priorities, `ip`) and set pointers keep their zero values, the always
/// written `conditions` struct shows as `{}`, and `omitempty` zeros are left out.
#[test]
fn go_zero_values_are_kept_where_go_keeps_them() {
    let slice = discovery::EndpointSlice {
        metadata: Some(named("web-abcde")),
        address_type: Some("IPv4".into()),
        endpoints: vec![discovery::Endpoint {
            addresses: vec!["10.244.1.5".into()],
            conditions: Some(discovery::EndpointConditions {
                ready: Some(false),
                serving: None,
                terminating: None,
            }),
            ..Default::default()
        }],
        ports: vec![discovery::EndpointPort {
            port: Some(0),
            ..Default::default()
        }],
    };
    assert_eq!(
        decoded_from_go(DISCOVERY_V1, "EndpointSlice", &slice),
        json!({
            "apiVersion": DISCOVERY_V1, "kind": "EndpointSlice",
            "metadata": {"name": "web-abcde"},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.1.5"], "conditions": {"ready": false}}],
            "ports": [{"port": 0}]
        })
    );

    let api = apiregistration::APIService {
        metadata: Some(named("v1.apps")),
        spec: Some(apiregistration::APIServiceSpec {
            service: None,
            group: Some("apps".into()),
            version: Some("v1".into()),
            insecure_skip_tls_verify: Some(false),
            ca_bundle: Some(vec![]),
            group_priority_minimum: Some(0),
            version_priority: Some(0),
        }),
        status: Some(apiregistration::APIServiceStatus::default()),
    };
    assert_eq!(
        decoded_from_go(APIREGISTRATION_V1, "APIService", &api),
        json!({
            "apiVersion": APIREGISTRATION_V1, "kind": "APIService",
            "metadata": {"name": "v1.apps"},
            "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 0, "versionPriority": 0},
            "status": {}
        })
    );
}

/// JSON zero values through the codec: kept where the Go field is a pointer or has no
/// `omitempty`, left out where it has.
#[test]
fn json_zero_values_follow_go_presence() {
    let cases = [
        (
            json!({
                "apiVersion": "v1", "kind": "Service",
                "spec": {
                    "ports": [{"name": "", "port": 0, "nodePort": 0, "appProtocol": ""}],
                    "clusterIP": "", "healthCheckNodePort": 0, "publishNotReadyAddresses": false,
                    "selector": {}, "allocateLoadBalancerNodePorts": false,
                    "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}}
                },
                "status": {"loadBalancer": {"ingress": [
                    {"ip": "", "ports": [{"port": 0, "protocol": ""}]}
                ]}}
            }),
            json!({
                "apiVersion": "v1", "kind": "Service",
                "spec": {
                    "ports": [{"port": 0, "appProtocol": ""}],
                    "allocateLoadBalancerNodePorts": false,
                    "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}}
                },
                "status": {"loadBalancer": {"ingress": [
                    {"ports": [{"port": 0, "protocol": ""}]}
                ]}}
            }),
        ),
        (
            json!({
                "apiVersion": "v1", "kind": "Endpoints",
                "subsets": [{"addresses": [{"ip": "", "hostname": "", "nodeName": ""}],
                             "ports": [{"name": "", "port": 0, "protocol": ""}]}]
            }),
            json!({
                "apiVersion": "v1", "kind": "Endpoints",
                "subsets": [{"addresses": [{"ip": "", "nodeName": ""}], "ports": [{"port": 0}]}]
            }),
        ),
        (
            json!({
                "apiVersion": DISCOVERY_V1, "kind": "EndpointSlice",
                "addressType": "", "endpoints": [], "ports": []
            }),
            json!({
                "apiVersion": DISCOVERY_V1, "kind": "EndpointSlice",
                "addressType": "", "endpoints": [], "ports": []
            }),
        ),
        (
            json!({
                "apiVersion": NETWORKING_V1, "kind": "IPAddress",
                "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "web"}}
            }),
            json!({
                "apiVersion": NETWORKING_V1, "kind": "IPAddress",
                "spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "web"}}
            }),
        ),
        (
            json!({
                "apiVersion": APIREGISTRATION_V1, "kind": "APIService",
                "spec": {
                    "service": {"namespace": "", "name": "", "port": 0},
                    "insecureSkipTLSVerify": false, "caBundle": "",
                    "groupPriorityMinimum": 0, "versionPriority": 0
                },
                "status": {"conditions": [{"type": "", "status": "", "reason": ""}]}
            }),
            json!({
                "apiVersion": APIREGISTRATION_V1, "kind": "APIService",
                "spec": {"service": {"port": 0}, "groupPriorityMinimum": 0, "versionPriority": 0},
                "status": {"conditions": [{"type": "", "status": ""}]}
            }),
        ),
    ];
    for (sent, kept) in cases {
        assert_eq!(decode(&encoded(&sent)).unwrap(), kept, "{}", sent["kind"]);
    }
}
