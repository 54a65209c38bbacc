//! The official JavaScript client (`@kubernetes/client-node` 1.4 on this machine's Node) against
//! the real binary: typed create and list, server-side apply through
//! `PatchStrategy.ServerSideApply` (and its 409 for another manager), a Lease.

use std::path::PathBuf;

use strategy_host_e2e::{run_client_script, HostProcess};

#[test]
fn the_javascript_client_creates_applies_and_leases() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let client = root.join(".tools/js/node_modules/@kubernetes/client-node/dist/index.js");
    assert!(
        client.exists(),
        "{} missing: run scripts/setup.sh",
        client.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", &data]).unwrap();
    let seen = run_client_script(
        &host,
        "node",
        &root.join("tests/js/client.mjs"),
        &[("K8S_CLIENT_NODE", client.as_os_str())],
    );
    assert_eq!(seen["created"], "js");
    assert_eq!(seen["applied"], serde_json::json!({"a": "1", "b": "2"}));
    assert!(
        seen["managers"]
            .as_array()
            .unwrap()
            .contains(&"js-client:Apply".into()),
        "{seen}"
    );
    assert_eq!(seen["conflict"], 409);
    assert_eq!(seen["lease"], "js");
    assert!(
        seen["listed"].as_array().unwrap().contains(&"js".into()),
        "{seen}"
    );
}
