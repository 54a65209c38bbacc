//! Services, Endpoints and EndpointSlices with kubectl 1.35, as charts use them: cluster IPs
//! from `--service-cluster-ip-range` recorded as IPAddress objects, kept across re-applies,
//! refused when taken, released on delete; node ports; kubectl's columns; the `kubernetes`
//! Service naming the server.
//!
//! The metrics-server manifests are from kubernetes-sigs/metrics-server's `components.yaml`
//! (v0.7, Apache-2.0).

use serde_json::Value;
use strategy_host_e2e::{latest_kubectl_path, KubeFixture};

const METRICS_SERVER: &str = r#"apiVersion: v1
kind: Service
metadata:
  labels:
    k8s-app: metrics-server
  name: metrics-server
  namespace: kube-system
spec:
  ports:
  - name: https
    port: 443
    protocol: TCP
    targetPort: https
  selector:
    k8s-app: metrics-server
"#;

const SLICE: &str = r#"apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-abcde
  namespace: kube-system
  labels:
    kubernetes.io/service-name: metrics-server
addressType: IPv4
ports:
- name: https
  port: 10250
  protocol: TCP
endpoints:
- addresses: ["127.0.0.1"]
  conditions: {ready: true}
"#;

fn json(k: &KubeFixture, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&k.ok(&all)).unwrap()
}

fn row(table: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .map(|row| row.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

#[test]
fn services_get_cluster_ips_and_node_ports_as_kube_apiserver_gives_them() {
    let k = KubeFixture::start_with(
        latest_kubectl_path().unwrap(),
        &["--service-cluster-ip-range", "10.100.0.0/24"],
    );
    k.ok_with(&["apply", "-f", "-"], Some(METRICS_SERVER));
    let svc = json(&k, &["get", "svc", "-n", "kube-system", "metrics-server"]);
    let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_string();
    assert!(ip.starts_with("10.100.0."), "{ip}");
    assert_eq!(svc["spec"]["clusterIPs"], serde_json::json!([ip]));
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], "https");
    let table = k.ok(&["get", "svc", "-n", "kube-system"]);
    assert_eq!(
        table
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    assert_eq!(
        row(&table, "metrics-server")[1..5],
        ["ClusterIP", ip.as_str(), "<none>", "443/TCP"]
    );
    // The address is an IPAddress object naming the Service.
    let claim = json(&k, &["get", "ipaddress", &ip]);
    assert_eq!(claim["spec"]["parentRef"]["resource"], "services");
    assert_eq!(claim["spec"]["parentRef"]["name"], "metrics-server");

    // Re-applied, and applied with a change, the Service keeps its address.
    let again = k.ok_with(&["apply", "-f", "-"], Some(METRICS_SERVER));
    assert!(again.contains("unchanged"), "{again}");
    let relabelled = METRICS_SERVER.replace(
        "  name: metrics-server\n",
        "  name: metrics-server\n  annotations: {team: observability}\n",
    );
    k.ok_with(&["apply", "-f", "-"], Some(&relabelled));
    let svc = json(&k, &["get", "svc", "-n", "kube-system", "metrics-server"]);
    assert_eq!(svc["spec"]["clusterIP"], ip.as_str());

    // The address cannot be had twice, nor one outside the range.
    let taken = k.fails(&[
        "create",
        "service",
        "clusterip",
        "copy",
        "--tcp=80",
        &format!("--clusterip={ip}"),
    ]);
    assert!(
        taken.contains(&format!("spec.clusterIPs[0]: Invalid value: \"{ip}\": failed to allocate IP {ip}: provided IP is already allocated")),
        "{taken}"
    );
    let outside = k.fails(&[
        "create",
        "service",
        "clusterip",
        "far",
        "--tcp=80",
        "--clusterip=10.96.0.10",
    ]);
    assert!(
        outside.contains("The range of valid IPs is 10.100.0.0/24"),
        "{outside}"
    );

    // Node ports: the one asked for, or one from 30000-32767; never one held twice.
    k.ok(&[
        "create",
        "service",
        "nodeport",
        "web",
        "--tcp=80:8080",
        "--node-port=30080",
    ]);
    let table = k.ok(&["get", "svc", "web"]);
    assert_eq!(row(&table, "web")[1], "NodePort");
    assert_eq!(row(&table, "web")[4], "80:30080/TCP");
    let clash = k.fails(&[
        "create",
        "service",
        "nodeport",
        "web2",
        "--tcp=80",
        "--node-port=30080",
    ]);
    assert!(
        clash.contains(
            "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
        ),
        "{clash}"
    );
    k.ok(&["create", "service", "nodeport", "web3", "--tcp=81"]);
    let given = json(&k, &["get", "svc", "web3"])["spec"]["ports"][0]["nodePort"]
        .as_i64()
        .unwrap();
    assert!(
        (30000..=32767).contains(&given) && given != 30080,
        "{given}"
    );

    // Wrong input gets Kubernetes' field errors.
    let bad = k.fails(&["create", "service", "clusterip", "9lives", "--tcp=80"]);
    assert!(
        bad.contains("a DNS-1035 label must consist of lower case alphanumeric characters"),
        "{bad}"
    );

    // EndpointSlices are stored and listed as kubectl prints them.
    k.ok_with(&["apply", "-f", "-"], Some(SLICE));
    let table = k.ok(&["get", "endpointslices", "-n", "kube-system"]);
    assert_eq!(
        row(&table, "metrics-server-abcde")[1..4],
        ["IPv4", "10250", "127.0.0.1"]
    );

    // The `kubernetes` Service names this server: the range's first address, 443 to the port
    // it listens on; deleted, it comes back.
    let port: u16 = k
        .host
        .base_url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let mut kubernetes = Value::Null;
    strategy_host_e2e::eventually(
        "the kubernetes Service",
        std::time::Duration::from_secs(20),
        || {
            let (ok, out, _) = k.run(&["get", "svc", "kubernetes", "-o", "json"]);
            kubernetes = if ok {
                serde_json::from_str(&out).unwrap()
            } else {
                Value::Null
            };
            ok
        },
    );
    assert_eq!(kubernetes["spec"]["clusterIP"], "10.100.0.1");
    assert_eq!(kubernetes["spec"]["ports"][0]["port"], 443);
    assert_eq!(kubernetes["spec"]["ports"][0]["targetPort"], port);
    let slice = json(&k, &["get", "endpointslice", "kubernetes"]);
    assert_eq!(slice["endpoints"][0]["addresses"][0], "127.0.0.1");
    assert_eq!(slice["ports"][0]["port"], port);
    k.ok(&["delete", "svc", "kubernetes"]);
    strategy_host_e2e::eventually(
        "the kubernetes Service back",
        std::time::Duration::from_secs(30),
        || k.run(&["get", "svc", "kubernetes"]).0,
    );

    // Deleted, the Service gives its address back.
    k.ok(&["delete", "svc", "-n", "kube-system", "metrics-server"]);
    let (found, _, _) = k.run(&["get", "ipaddress", &ip]);
    assert!(!found, "{ip} still claimed");
}
