//! A real operator against the server: a kopf operator's child ConfigMaps are adopted, its Event
//! shows in `kubectl describe`, and the children go with their parent.

use std::time::Duration;

use strategy_host_e2e::{eventually, widget};

use super::{create, exists, kube, CONFIGMAPS, WAIT, WIDGETS};

/// A kopf operator (pip `kopf`, installed by `scripts/setup.sh` into `.tools/kopf`) adopting a
/// child ConfigMap per Widget and posting an Event: `kubectl describe` shows the Event and
/// deleting the Widget removes the child.
#[test]
fn a_kopf_operators_children_go_with_their_parent() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let kopf = root.join(".tools/kopf");
    assert!(
        kopf.join("kopf").exists(),
        "{} missing: run scripts/setup.sh",
        kopf.display()
    );
    let k = kube();
    let host = &k.host;
    let kubeconfig = k.dir.path().join("operator-kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '{}'}}}}]\nusers: [{{name: u, user: {{}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n",
            host.base_url
        ),
    )
    .unwrap();
    let python_path = std::env::join_paths([kopf, root.join(".tools/python")]).unwrap();
    let mut operator = std::process::Command::new("python3")
        .args(["-m", "kopf", "run", "--standalone", "-n", "default"])
        .arg(root.join("tests/python/operator.py"))
        .env("PYTHONPATH", python_path)
        .env("KUBECONFIG", &kubeconfig)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = operator.stderr.take().unwrap();
    let log = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    struct Stop(std::process::Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let operator = Stop(operator);

    let parent = create(host, WIDGETS, widget("parent", 3), &[]);
    let child = format!("{CONFIGMAPS}/parent-child");
    let waited = std::panic::catch_unwind(|| {
        eventually(
            "the operator to create the child",
            Duration::from_secs(60),
            || exists(host, &child),
        );
    });
    if waited.is_err() {
        drop(operator);
        panic!(
            "the operator never made the child; it logged:\n{}",
            log.join().unwrap()
        );
    }
    let adopted = k.get(&child);
    assert_eq!(
        adopted["metadata"]["ownerReferences"][0]["uid"], parent["metadata"]["uid"],
        "{adopted}"
    );
    assert_eq!(
        adopted["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], true,
        "{adopted}"
    );
    eventually("describe to show the operator's Event", WAIT, || {
        k.ok(&["describe", "widget", "parent"])
            .contains("created ConfigMap parent-child")
    });
    k.ok(&["delete", "widget", "parent"]);
    eventually("the child to go with its parent", WAIT, || {
        !exists(host, &child)
    });
    drop(operator);
}
