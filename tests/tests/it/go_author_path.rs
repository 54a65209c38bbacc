//! strategies/go/README.md's "From an empty folder", followed literally: its `sh` blocks run in
//! order in an empty directory, with the Go toolchain and `strategy-host` on `PATH`, against a
//! development-mode server whose strategy directory they write to (and which takes a Go module
//! inline). Every block succeeds, and what it made is checked over the API: the Bucket served
//! by the module loaded by directory, then by object.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use strategy_host_e2e::{get, host_binary, latest_kubectl_path, shared_module_cache, HostProcess};

/// The `sh` blocks of the README section, in order.
fn blocks() -> Vec<String> {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../strategies/go/README.md");
    let text = std::fs::read_to_string(readme).unwrap();
    let section = text
        .split("## From an empty folder")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the section");
    section
        .split("```sh\n")
        .skip(1)
        .map(|b| b.split("\n```").next().unwrap().to_owned())
        .collect()
}

#[test]
fn the_go_authors_path_runs_literally() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    let go = checkout.join(".tools/go/go/bin");
    assert!(
        go.join("go").exists(),
        "Go is installed by scripts/setup.sh"
    );
    let work = tempfile::tempdir().unwrap();
    let strategy_dir = work.path().join("strategies");
    std::fs::create_dir(&strategy_dir).unwrap();
    let host = HostProcess::start(&[
        "--strategy-dir",
        &strategy_dir.display().to_string(),
        "--module-cache-dir",
        &shared_module_cache().display().to_string(),
        "--max-request-body-bytes",
        "16777216",
    ])
    .unwrap();
    let kubectl = latest_kubectl_path().unwrap();
    let bin_dir: PathBuf = host_binary().unwrap().parent().unwrap().into();
    let path = format!(
        "{}:{}:{}",
        go.display(),
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = work.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let script = format!("set -e\n{}\n", blocks().join("\n"));
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(work.path())
        .env("SH", &checkout)
        .env(
            "K",
            format!("{} --server {}", kubectl.display(), host.base_url),
        )
        .env("STRATEGY_DIR", &strategy_dir)
        .env("PATH", path)
        .env("HOME", &home)
        .env("KUBECONFIG", home.join("none"))
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=mod")
        .env("GOCACHE", checkout.join("target/go-cache"))
        .env("STRATEGY_HOST_MODULE_CACHE_DIR", shared_module_cache())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Step 4's report, and step 5's default.
    assert!(stdout.contains("admitted"), "{stdout}");
    assert!(stdout.contains("\n10\n"), "{stdout}");
    // Step 6: the module by object serves; the large bucket was created with its warning.
    assert!(stderr.contains("billed by the month"), "{stderr}");
    let (code, body) =
        get(&host.url("/apis/storage.example.com/v1/namespaces/default/buckets/archive")).unwrap();
    assert_eq!(code, 200, "{body}");
    let archive: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(archive["spec"]["sizeGi"], 5000);
    let (_, module) =
        get(&host.url("/apis/strategyhost.io/v1alpha1/strategymodules/buckets")).unwrap();
    let module: Value = serde_json::from_str(&module).unwrap();
    assert_eq!(module["status"]["phase"], "Active", "{module}");
}
