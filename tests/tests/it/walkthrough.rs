//! The README's "Five minutes" block, run literally with kubectl 1.35 against a development-mode
//! server loading the example strategies as `examples/run.sh` does: every command succeeds,
//! nothing prints a warning, the watch shows its events, and the hooks' namespaces exist.

use std::path::Path;
use std::process::Command;

use strategy_host_e2e::{latest_kubectl_path, shared_module_cache, HostProcess};

/// The README's first `sh` block after `## Five minutes`, without the line that sets `K`.
fn walkthrough() -> String {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let text = std::fs::read_to_string(readme).unwrap();
    let section = text.split("## Five minutes").nth(1).expect("the section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("its sh block");
    // A command sent to the background (the watch) gets a second to start, as it would while
    // a person types the next one.
    block
        .lines()
        .filter(|l| !l.starts_with("K="))
        .map(
            |l| match l.split('#').next().unwrap_or("").trim_end().ends_with('&') {
                true => format!("{l}\nsleep 1"),
                false => l.to_owned(),
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_readme_walkthrough_runs_without_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let strategies = dir.path().join("example-strategies");
    std::fs::create_dir(&strategies).unwrap();
    for (file, module) in [
        ("strategy_deployment.wasm", strategy_artifacts::DEPLOYMENT),
        ("strategy_configmap.wasm", strategy_artifacts::CONFIGMAP),
        ("strategy_project.wasm", strategy_artifacts::PROJECT),
        ("tenants_go.wasm", strategy_artifacts::GO_TENANT),
    ] {
        std::fs::copy(module, strategies.join(file)).unwrap();
    }
    strategy_host_e2e::warm_go_modules();
    let host = HostProcess::start(&[
        "--strategy-dir",
        &strategies.display().to_string(),
        // The Go module compiles once for every test that loads it.
        "--module-cache-dir",
        &shared_module_cache().display().to_string(),
    ])
    .unwrap();
    let kubectl = latest_kubectl_path().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let script = format!(
        "set -e\nK=\"{} --server {}\"\n{}\nsleep 1\nkill $(jobs -p)\n",
        kubectl.display(),
        host.base_url,
        walkthrough()
    );
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env("HOME", &home)
        .env("KUBECONFIG", home.join("none"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.to_lowercase().contains("warning"), "{stderr}");
    for event in ["ADDED", "MODIFIED", "DELETED"] {
        assert!(stdout.contains(event), "no {event} in the watch:\n{stdout}");
    }
    assert!(
        stdout.contains("namespace/team-x") || stdout.contains("team-x"),
        "{stdout}"
    );
    assert!(stdout.contains("acme"), "{stdout}");
}
