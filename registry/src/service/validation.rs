//! A Service's spec defaulted and validated as kube-apiserver's `SetDefaults_Service` and
//! `ValidateService` do: types, ports, protocols, target ports, what each type may carry.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::names::dns1123_subdomain_error;
use crate::strategy::FieldError;

/// The Service types.
pub const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const AFFINITIES: &[&str] = &["ClientIP", "None"];
const TRAFFIC_POLICIES: &[&str] = &["Cluster", "Local"];
const FAMILY_POLICIES: &[&str] = &["PreferDualStack", "RequireDualStack", "SingleStack"];

/// The type of a Service spec (`ClusterIP` when unset).
pub fn service_type(spec: &Value) -> &str {
    spec["type"].as_str().unwrap_or("ClusterIP")
}

/// Whether the Service is reached from outside (NodePort or LoadBalancer): it has node ports.
pub fn has_node_ports(spec: &Value) -> bool {
    matches!(service_type(spec), "NodePort" | "LoadBalancer")
}

/// Whether the Service gets a cluster IP: not ExternalName, not headless (`None`).
pub fn needs_cluster_ip(spec: &Value) -> bool {
    service_type(spec) != "ExternalName" && spec["clusterIP"] != "None"
}

/// Kubernetes' defaults of a Service spec (`SetDefaults_Service`).
pub fn set_defaults(spec: &mut Value) {
    if !spec.is_object() {
        *spec = json!({});
    }
    let kind = service_type(spec).to_string();
    let set = |spec: &mut Value, key: &str, value: Value| {
        if spec.get(key).is_none_or(Value::is_null) {
            spec[key] = value;
        }
    };
    set(spec, "type", json!(kind));
    set(spec, "sessionAffinity", json!("None"));
    if spec["sessionAffinity"] == "ClientIP" {
        let timeout = spec.pointer("/sessionAffinityConfig/clientIP/timeoutSeconds");
        if timeout.is_none_or(Value::is_null) {
            spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 10800}});
        }
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter(|p| p.is_object()) {
            if port.get("protocol").is_none_or(Value::is_null) {
                port["protocol"] = json!("TCP");
            }
            let unset = |v: &Value| v.is_null() || v == &json!(0) || v == &json!("");
            if port.get("targetPort").is_none_or(unset) {
                port["targetPort"] = port["port"].clone();
            }
        }
    }
    if kind != "ExternalName" {
        set(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if has_node_ports(spec) {
        set(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        set(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

/// Whether `name` is an IANA service name (a named port): at most 15 lowercase letters, digits
/// and single hyphens, at least one letter, no hyphen at either end.
fn iana_service_name_error(name: &str) -> Option<&'static str> {
    if name.len() > 15 {
        return Some("must be no more than 15 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Some("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if name.contains("--") {
        return Some("must not contain consecutive hyphens");
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        return Some("must contain at least one letter (a-z)");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("must not begin or end with a hyphen");
    }
    None
}

const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// The field errors of a (defaulted) Service spec.
pub fn validate(spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let kind = service_type(spec);
    if !TYPES.contains(&kind) {
        errors.push(FieldError::not_supported("spec.type", &json!(kind), TYPES));
    }
    let text = |key: &str| spec[key].as_str().unwrap_or_default();
    // The members that, when set, must be one of their values.
    for (key, supported) in [
        ("sessionAffinity", AFFINITIES),
        ("internalTrafficPolicy", TRAFFIC_POLICIES),
        ("externalTrafficPolicy", TRAFFIC_POLICIES),
        ("ipFamilyPolicy", FAMILY_POLICIES),
    ] {
        if let Some(value) = spec[key].as_str().filter(|v| !supported.contains(v)) {
            errors.push(FieldError::not_supported(
                format!("spec.{key}"),
                &json!(value),
                supported,
            ));
        }
    }
    if !has_node_ports(spec) && spec["externalTrafficPolicy"].is_string() {
        errors.push(FieldError::invalid(
            "spec.externalTrafficPolicy",
            &spec["externalTrafficPolicy"],
            "may only be set for externally-accessible services",
        ));
    }
    if kind == "ExternalName" {
        let name = text("externalName");
        if name.is_empty() {
            errors.push(FieldError::required("spec.externalName", ""));
        } else if let Some(why) = dns1123_subdomain_error(name.trim_end_matches('.')) {
            errors.push(FieldError::invalid("spec.externalName", &json!(name), why));
        }
        if !text("clusterIP").is_empty() {
            errors.push(FieldError::forbidden(
                "spec.clusterIP",
                "may not be set for ExternalName services",
            ));
        }
    }
    let ports = spec["ports"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if ports.is_empty() && kind != "ExternalName" && text("clusterIP") != "None" {
        errors.push(FieldError::required("spec.ports", ""));
    }
    let mut names = BTreeSet::new();
    let mut keys = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let path = format!("spec.ports[{i}]");
        let name = port["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            if ports.len() > 1 {
                errors.push(FieldError::required(format!("{path}.name"), ""));
            }
        } else if let Some(why) = crate::names::dns1123_label_error(name) {
            errors.push(FieldError::invalid(
                format!("{path}.name"),
                &json!(name),
                why,
            ));
        } else if !names.insert(name) {
            errors.push(FieldError::duplicate(format!("{path}.name"), &json!(name)));
        }
        let number = port["port"].as_i64().unwrap_or(0);
        if !(1..=65535).contains(&number) {
            errors.push(FieldError::invalid(
                format!("{path}.port"),
                &json!(number),
                PORT_RANGE,
            ));
        }
        let protocol = port["protocol"].as_str().unwrap_or_default();
        if !PROTOCOLS.contains(&protocol) {
            errors.push(FieldError::not_supported(
                format!("{path}.protocol"),
                &json!(protocol),
                PROTOCOLS,
            ));
        }
        if !keys.insert((number, protocol)) {
            errors.push(FieldError::duplicate(
                path.clone(),
                &json!({"port": number, "protocol": protocol}),
            ));
        }
        match &port["targetPort"] {
            Value::Number(n) if !(1..=65535).contains(&n.as_i64().unwrap_or(0)) => {
                errors.push(FieldError::invalid(
                    format!("{path}.targetPort"),
                    &port["targetPort"],
                    PORT_RANGE,
                ));
            }
            Value::String(s) => {
                if let Some(why) = iana_service_name_error(s) {
                    errors.push(FieldError::invalid(
                        format!("{path}.targetPort"),
                        &json!(s),
                        why,
                    ));
                }
            }
            _ => {}
        }
        let node_port = port["nodePort"].as_i64().unwrap_or(0);
        if node_port != 0 {
            if !has_node_ports(spec) {
                errors.push(FieldError::forbidden(
                    format!("{path}.nodePort"),
                    format!("may not be used when `type` is '{kind}'"),
                ));
            } else if !(1..=65535).contains(&node_port) {
                errors.push(FieldError::invalid(
                    format!("{path}.nodePort"),
                    &json!(node_port),
                    PORT_RANGE,
                ));
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(mut spec: Value) -> Vec<String> {
        set_defaults(&mut spec);
        validate(&spec).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn defaults_are_kubernetes() {
        let mut spec = json!({"type": "LoadBalancer", "ports": [{"port": 80}]});
        set_defaults(&mut spec);
        assert_eq!(
            spec,
            json!({"type": "LoadBalancer", "sessionAffinity": "None",
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                "internalTrafficPolicy": "Cluster", "externalTrafficPolicy": "Cluster",
                "allocateLoadBalancerNodePorts": true})
        );
        let mut plain = json!({"ports": [{"port": 53, "protocol": "UDP", "targetPort": "dns"}]});
        set_defaults(&mut plain);
        assert_eq!(plain["type"], "ClusterIP");
        assert_eq!(plain["ports"][0]["targetPort"], "dns");
        assert!(plain.get("externalTrafficPolicy").is_none());
    }

    #[test]
    fn field_errors_are_worded_as_kubernetes_words_them() {
        let got = errors(json!({"type": "Weird", "ports": [
            {"name": "http", "port": 0, "protocol": "FOO", "targetPort": "Bad_Name"},
            {"name": "http", "port": 80, "nodePort": 30080}]}));
        for expected in [
            "spec.type: Unsupported value: \"Weird\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
            "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "spec.ports[0].protocol: Unsupported value: \"FOO\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.ports[0].targetPort: Invalid value: \"Bad_Name\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            "spec.ports[1].name: Duplicate value: \"http\"",
            "spec.ports[1].nodePort: Forbidden: may not be used when `type` is 'Weird'",
        ] {
            assert!(got.contains(&expected.to_string()), "{expected}\nnot in\n{got:#?}");
        }
        assert_eq!(
            errors(json!({"ports": [{"port": 80}, {"port": 443}]})),
            [
                "spec.ports[0].name: Required value",
                "spec.ports[1].name: Required value"
            ]
        );
        assert_eq!(errors(json!({})), ["spec.ports: Required value"]);
        assert!(errors(json!({"clusterIP": "None"})).is_empty());
        assert_eq!(
            errors(json!({"type": "ExternalName"})),
            ["spec.externalName: Required value"]
        );
        assert!(
            errors(json!({"type": "ExternalName", "externalName": "db.example.com."})).is_empty()
        );
    }
}
