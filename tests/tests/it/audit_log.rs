//! The audit log rotates as kube-apiserver's does: past `--audit-log-maxsize` it moves to a
//! timestamped backup, `--audit-log-maxbackup` backups are kept, and no event is lost or split
//! across a rotation.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use strategy_host_e2e::{call, HostProcess};

const CREATES: usize = 1000;

/// The audit log's files in `dir`, oldest first (backup names sort by time; the live file last).
fn log_files(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("audit")
        })
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    files.sort_by_key(|(name, _)| (name == "audit.log", name.clone()));
    files
}

#[test]
fn the_audit_log_rotates_by_size_keeps_its_backups_and_loses_no_event() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let logs = dir.path().join("logs");
    let log = logs.join("audit.log").display().to_string();
    let host = HostProcess::start(&[
        "--data-dir",
        &data,
        "--audit-log-path",
        &log,
        "--audit-level",
        "RequestResponse",
        "--audit-log-maxsize",
        "1",
        "--audit-log-maxbackup",
        "2",
    ])
    .unwrap();
    let url = host.url("/api/v1/namespaces/default/configmaps");
    let padding = "x".repeat(1024);
    for i in 0..CREATES {
        let cm = json!({"metadata": {"name": format!("c{i:04}")}, "data": {"pad": padding}});
        let r = call("POST", &url, Some(&cm)).unwrap();
        assert_eq!(r.code, 201, "{}", r.body);
    }
    // The writer flushes when its queue empties: wait for the last create's event.
    let last = format!("c{:04}", CREATES - 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !log_files(&logs).iter().any(|(_, t)| t.contains(&last)) {
        assert!(
            Instant::now() < deadline,
            "the last event never reached the log"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let files = log_files(&logs);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(files.len(), 3, "the live file and two backups: {names:?}");
    let mut created = Vec::new();
    for (name, text) in &files {
        assert!(text.ends_with('\n'), "{name} ends between events");
        if name != "audit.log" {
            assert!(
                name.starts_with("audit-20") && name.ends_with(".log"),
                "{name}"
            );
            assert!(
                text.len() <= (1 << 20) + 16 * 1024,
                "{name}: {} bytes",
                text.len()
            );
        }
        for line in text.lines() {
            let event: Value = serde_json::from_str(line).expect("each line is one whole event");
            if event["stage"] == "ResponseComplete" && event["verb"] == "create" {
                created.push(
                    event["responseObject"]["metadata"]["name"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                );
            }
        }
    }
    // What is kept is the newest stretch of the log, every create in it, in order.
    let first: usize = created[0][1..].parse().unwrap();
    let expected: Vec<String> = (first..CREATES).map(|i| format!("c{i:04}")).collect();
    assert_eq!(created, expected);
    assert!(first > 0, "older events went with the deleted backups");
}
