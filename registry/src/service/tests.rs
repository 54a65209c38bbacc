//! Services through a registry over the embedded store: cluster IPs claimed as IPAddress
//! objects, kept across updates that leave them out, released on delete and type change.

use std::sync::Arc;

use serde_json::{json, Value};

use super::cluster_ip::ServiceIpRange;
use super::NodePortRange;
use crate::error::Error;
use crate::served::Registry;
use crate::store::RequestScope;
use crate::strategy::DefaultResolver;
use crate::update::UpdateFn;

fn scope(namespace: Option<&str>) -> RequestScope {
    RequestScope {
        version: "v1".into(),
        namespace: namespace.map(str::to_string),
        ..RequestScope::default()
    }
}

/// A registry serving Services from `10.0.0.0/28` (14 addresses) with namespace `default`.
async fn registry(dir: &std::path::Path) -> Arc<Registry> {
    let registry = Registry::open_embedded(&dir.join("db"), Arc::new(DefaultResolver))
        .await
        .unwrap();
    registry.serve_kinds(&[&crate::kinds::Services {
        cluster_ips: "10.0.0.0/28".parse().unwrap(),
        node_ports: NodePortRange::default(),
    }]);
    registry.start();
    let namespaces = registry.resolve("", "v1", "namespaces").unwrap();
    namespaces
        .store
        .create(
            &scope(None),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
        )
        .await
        .unwrap();
    registry
}

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

/// Creates the Service `name` in `default` with `spec`.
async fn create(registry: &Registry, name: &str, spec: Value) -> Result<Value, Error> {
    let services = registry.resolve("", "v1", "services").unwrap();
    let created = services
        .store
        .create(&scope(Some("default")), service(name, spec))
        .await;
    created.map(|o| o.object)
}

/// Updates the Service `name` in `default` through `change`.
async fn update(registry: &Registry, name: &str, change: UpdateFn) -> Result<Value, Error> {
    let services = registry.resolve("", "v1", "services").unwrap();
    let updated = services
        .store
        .update(&scope(Some("default")), name, change)
        .await;
    updated.map(|o| o.object)
}

/// An update that puts `obj` in place of whatever is stored.
fn put(obj: Value) -> UpdateFn {
    Arc::new(move |_| Ok(obj.clone()))
}

async fn address(registry: &Registry, ip: &str) -> Option<Value> {
    let addresses = registry
        .resolve("networking.k8s.io", "v1", "ipaddresses")
        .unwrap();
    addresses
        .store
        .get(&scope(None), ip, Default::default())
        .await
        .ok()
}

/// The causes of a write refused as `Invalid`.
fn causes<T: std::fmt::Debug>(refused: Result<T, Error>) -> Vec<String> {
    match refused {
        Err(Error::Invalid { causes, .. }) => causes.iter().map(ToString::to_string).collect(),
        other => panic!("not Invalid: {other:?}"),
    }
}

#[tokio::test]
async fn every_service_gets_its_own_cluster_ip_recorded_as_an_ip_address() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(dir.path()).await;
    let web = create(&registry, "web", json!({"ports": [{"port": 80}]}))
        .await
        .unwrap();
    let ip = web["spec"]["clusterIP"].as_str().unwrap().to_string();
    let range: ServiceIpRange = "10.0.0.0/28".parse().unwrap();
    assert!(range.contains(ip.parse().unwrap()), "{ip}");
    assert_eq!(web["spec"]["clusterIPs"], json!([ip]));
    assert_eq!(web["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(web["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(web["spec"]["ports"][0]["targetPort"], 80);
    assert_eq!(web["status"], json!({"loadBalancer": {}}));
    let claim = address(&registry, &ip).await.expect("an IPAddress");
    assert_eq!(
        claim["spec"]["parentRef"],
        json!({"group": "", "resource": "services", "namespace": "default", "name": "web"})
    );
    // Asking for that address again is refused; the 13 others go to 13 more Services, the
    // 15th finds the range full.
    let copy = json!({"clusterIP": ip, "ports": [{"port": 80}]});
    let taken = create(&registry, "copy", copy).await;
    assert_eq!(
        causes(taken),
        [format!("spec.clusterIPs[0]: Invalid value: \"{ip}\": failed to allocate IP {ip}: provided IP is already allocated")]
    );
    let mut seen = vec![ip.clone()];
    for i in 0..13 {
        let s = create(
            &registry,
            &format!("s{i}"),
            json!({"ports": [{"port": 80}]}),
        )
        .await
        .unwrap();
        let got = s["spec"]["clusterIP"].as_str().unwrap().to_string();
        assert!(!seen.contains(&got), "{got} given twice");
        seen.push(got);
    }
    let full = create(&registry, "full", json!({"ports": [{"port": 80}]}))
        .await
        .unwrap_err();
    assert!(full.to_string().contains("range is full"), "{full}");
    let elsewhere = json!({"clusterIP": "10.1.0.1", "ports": [{"port": 80}]});
    let outside = create(&registry, "outside", elsewhere).await;
    assert!(
        causes(outside)[0].ends_with("the provided IP (10.1.0.1) is not in the valid range. The range of valid IPs is 10.0.0.0/28"),
    );
}

#[tokio::test]
async fn updates_keep_the_address_and_deletes_release_it() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(dir.path()).await;
    let services = registry.resolve("", "v1", "services").unwrap();
    let web = create(
        &registry,
        "web",
        json!({"type": "NodePort", "ports": [{"port": 80}]}),
    )
    .await
    .unwrap();
    let ip = web["spec"]["clusterIP"].as_str().unwrap().to_string();
    let node_port = web["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&node_port));
    // A PUT of the manifest as first applied (no clusterIP, no nodePort) keeps both.
    let manifest = service(
        "web",
        json!({"type": "NodePort", "ports": [{"port": 80}], "selector": {"app": "web"}}),
    );
    let updated = update(&registry, "web", put(manifest)).await.unwrap();
    assert_eq!(updated["spec"]["clusterIP"], ip.as_str());
    assert_eq!(updated["spec"]["ports"][0]["nodePort"], node_port);
    // Changing the address is refused.
    let moved = service(
        "web",
        json!({"type": "NodePort", "clusterIP": "10.0.0.3", "ports": [{"port": 80}]}),
    );
    let err = update(&registry, "web", put(moved)).await;
    assert_eq!(
        causes(err),
        [format!(
            "spec.clusterIPs[0]: Invalid value: \"{ip}\": may not change once set"
        )]
    );
    // Becoming an ExternalName releases the address and the node port.
    let external = move |old: Option<&Value>| {
        let mut obj = old.unwrap().clone();
        obj["spec"]["type"] = json!("ExternalName");
        obj["spec"]["externalName"] = json!("db.example.com");
        Ok(obj)
    };
    let external: UpdateFn = Arc::new(external);
    let now = update(&registry, "web", external).await.unwrap();
    assert!(now["spec"].get("clusterIP").is_none(), "{now}");
    assert!(now["spec"]["ports"][0].get("nodePort").is_none(), "{now}");
    assert!(address(&registry, &ip).await.is_none(), "released");
    // A Service deleted gives its address back.
    let db = create(&registry, "db", json!({"ports": [{"port": 5432}]}))
        .await
        .unwrap();
    let db_ip = db["spec"]["clusterIP"].as_str().unwrap().to_string();
    assert!(address(&registry, &db_ip).await.is_some());
    services
        .store
        .delete(&scope(Some("default")), "db", &Default::default())
        .await
        .unwrap();
    assert!(address(&registry, &db_ip).await.is_none(), "released");
}

#[tokio::test]
async fn headless_and_external_name_services_get_no_address() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(dir.path()).await;
    let headless = create(
        &registry,
        "headless",
        json!({"clusterIP": "None", "selector": {"app": "db"}}),
    )
    .await
    .unwrap();
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
    let external = create(
        &registry,
        "ext",
        json!({"type": "ExternalName", "externalName": "example.com"}),
    )
    .await
    .unwrap();
    assert!(external["spec"].get("clusterIP").is_none());
    let dual_stack = json!({"ipFamilyPolicy": "RequireDualStack", "ports": [{"port": 80}]});
    let dual = create(&registry, "dual", dual_stack).await;
    assert_eq!(
        causes(dual),
        ["spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services"]
    );
}
