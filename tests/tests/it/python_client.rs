//! The official Python client (pip `kubernetes`, installed by `scripts/setup.sh` into
//! `.tools/python`) against the real binary: typed create, get, list, a watch from the list's
//! resourceVersion that sees the create, patch and delete in order, 404 after the delete, and an
//! owned child going with a foreground delete of its owner.

use std::path::PathBuf;

use serde_json::json;
use strategy_host_e2e::{run_client_script, HostProcess};

#[test]
fn the_python_client_creates_gets_lists_and_watches() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let packages = root.join(".tools/python");
    assert!(
        packages.join("kubernetes").exists(),
        "{} missing: run scripts/setup.sh",
        packages.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", &data]).unwrap();
    let seen = run_client_script(
        &host,
        "python3",
        &root.join("tests/python/client.py"),
        &[("PYTHONPATH", packages.as_os_str())],
    );
    assert_eq!(seen["got"], json!({"a": "1"}), "{seen}");
    assert_eq!(seen["same_version"], true, "{seen}");
    assert!(
        seen["listed"].as_array().unwrap().contains(&"py".into()),
        "{seen}"
    );
    assert_eq!(
        seen["events"],
        json!([["ADDED", "py"], ["MODIFIED", "py"], ["DELETED", "py"]]),
        "{seen}"
    );
    assert_eq!(seen["after_delete"], 404, "{seen}");
    assert_eq!(seen["owner_and_child_gone"], true, "{seen}");
}
