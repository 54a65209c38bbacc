//! End-to-end on the embedded store when the disk misbehaves: a full disk (a small tmpfs, as
//! root can mount) refuses writes with a 500 Status naming the reason while reads go on, writing
//! resumes once space returns, and nothing acknowledged is lost across a restart; a corrupt or
//! truncated store file stops startup with a message naming the file, never a panic.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use strategy_host_e2e::{call, run_to_exit, shared_module_cache, HostProcess};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A tmpfs of `size` mounted on a fresh directory, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("run mount");
        assert!(mounted.success(), "mounting a tmpfs needs root");
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// What an operator does when the disk fills: gives it more room.
    fn grow(&self, size: &str) {
        let grown = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(self.path())
            .status()
            .unwrap();
        assert!(grown.success());
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.path()).status();
    }
}

fn host(data: &Path) -> HostProcess {
    let data = data.to_str().unwrap();
    let cache = shared_module_cache();
    HostProcess::start(&[
        "--data-dir",
        data,
        "--module-cache-dir",
        cache.to_str().unwrap(),
    ])
    .unwrap()
}

fn config_map(name: &str, bytes: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
           "data": {"payload": "x".repeat(bytes)}})
}

#[test]
fn a_full_disk_refuses_writes_with_the_reason_and_writing_resumes_once_space_returns() {
    let disk = SmallDisk::mount("12m");
    let data = disk.path().join("data");
    let mut server = host(&data);
    let mut acknowledged = Vec::new();
    let mut refusal = None;
    for i in 0..200 {
        let name = format!("big-{i}");
        let reply = call(
            "POST",
            &server.url(CONFIGMAPS),
            Some(&config_map(&name, 200_000)),
        )
        .unwrap();
        match reply.code {
            201 => acknowledged.push(name),
            _ => {
                refusal = Some(reply);
                break;
            }
        }
    }
    let refusal = refusal.expect("a 12 MiB disk fills");
    assert_eq!(refusal.code, 500, "{}", refusal.body);
    let status = refusal.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "InternalError");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("disk holding the embedded store is full"),
        "{message}"
    );
    assert!(
        acknowledged.len() > 5,
        "only {} objects fit",
        acknowledged.len()
    );

    // Further writes keep getting the reason; reads go on from the watch cache.
    let again = call(
        "POST",
        &server.url(CONFIGMAPS),
        Some(&config_map("small", 10)),
    )
    .unwrap();
    assert_eq!(again.code, 500, "{}", again.body);
    assert!(again.body.contains("full"), "{}", again.body);
    let list = call("GET", &server.url(CONFIGMAPS), None).unwrap();
    assert_eq!(list.code, 200, "{}", list.body);

    disk.grow("64m");
    strategy_host_e2e::eventually("writes to succeed again", Duration::from_secs(10), || {
        call(
            "POST",
            &server.url(CONFIGMAPS),
            Some(&config_map("after", 10)),
        )
        .unwrap()
        .code
            == 201
    });
    acknowledged.push("after".into());
    let update = call(
        "PUT",
        &server.url(&format!("{CONFIGMAPS}/after")),
        Some(&config_map("after", 20)),
    )
    .unwrap();
    assert_eq!(update.code, 200, "{}", update.body);

    // Everything acknowledged is on disk: a restarted server has it.
    server.terminate().unwrap();
    let server = host(&data);
    for name in &acknowledged {
        let got = call("GET", &server.url(&format!("{CONFIGMAPS}/{name}")), None).unwrap();
        assert_eq!(
            got.code, 200,
            "{name} was acknowledged but is gone: {}",
            got.body
        );
    }
    let after = call("GET", &server.url(&format!("{CONFIGMAPS}/after")), None).unwrap();
    assert_eq!(after.json()["data"]["payload"].as_str().unwrap().len(), 20);
}

/// A data directory holding a store with a few objects, the server stopped.
fn store_with_objects() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = host(&data);
    for i in 0..20 {
        let name = format!("cm-{i}");
        let reply = call(
            "POST",
            &server.url(CONFIGMAPS),
            Some(&config_map(&name, 4_000)),
        )
        .unwrap();
        assert_eq!(reply.code, 201, "{}", reply.body);
    }
    server.terminate().unwrap();
    let file = data.join("store.redb");
    assert!(file.exists());
    // A clean stop leaves the stamp that lets the next start skip reading the whole file; the
    // damage each test does afterwards must be found all the same.
    assert!(
        data.join("store.redb.closed").exists(),
        "no clean-close stamp"
    );
    (dir, file)
}

/// Starts the server on a damaged store and returns what it said as it stopped.
fn refused_start(file: &Path) -> String {
    let data = file.parent().unwrap().to_str().unwrap();
    let cache = shared_module_cache();
    let (status, stderr) = run_to_exit(&[
        "--dev-mode",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data,
        "--module-cache-dir",
        cache.to_str().unwrap(),
    ])
    .unwrap();
    assert!(!status.success(), "started on a damaged store:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains(&file.display().to_string()),
        "the file is not named:\n{stderr}"
    );
    stderr
}

#[test]
fn a_truncated_store_file_stops_startup_with_a_clear_message() {
    let (_dir, file) = store_with_objects();
    let len = std::fs::metadata(&file).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(len / 3).unwrap();
    drop(f);
    refused_start(&file);
}

#[test]
fn a_store_file_of_garbage_stops_startup_with_a_clear_message() {
    let (_dir, file) = store_with_objects();
    let len = std::fs::metadata(&file).unwrap().len() as usize;
    let garbage: Vec<u8> = (0..len).map(|i| (i * 7919 % 251) as u8).collect();
    std::fs::write(&file, garbage).unwrap();
    refused_start(&file);
}

#[test]
fn a_store_file_with_damaged_pages_stops_startup_with_a_clear_message() {
    let (_dir, file) = store_with_objects();
    let intact = std::fs::read(&file).unwrap();
    let len = intact.len();
    // Two kinds of damage (redb reports the first as corruption and panics on the second, which
    // must read the same): the start of every page in the middle third, and of every third
    // page after the header.
    let middle: Vec<usize> = (len / 3..2 * len / 3).step_by(4096).collect();
    let spread: Vec<usize> = (4096..len).step_by(3 * 4096).collect();
    for pages in [middle, spread] {
        let mut bytes = intact.clone();
        for page in pages {
            bytes[page..page + 64].fill(0xde);
        }
        std::fs::write(&file, bytes).unwrap();
        let said = refused_start(&file);
        assert!(said.contains("damaged"), "{said}");
    }
}
