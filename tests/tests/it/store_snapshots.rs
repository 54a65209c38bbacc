//! End-to-end: a snapshot streamed from a running server under write load holds exactly what
//! was acknowledged up to its revision; `strategy-host store restore` brings it back in a new
//! data directory at the same resourceVersions, and moves it into etcd (resourceVersion order
//! kept) and back again.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use strategy_host::storage::etcd3::testing::EtcdServer;
use strategy_host_e2e::{call, run_to_exit, HostProcess};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion in {obj}"))
}

/// The snapshot's revision and its ConfigMaps in `default`: name → (modRevision, data.n).
fn configmaps_in(snapshot: &str) -> (u64, BTreeMap<String, (u64, Value)>) {
    let mut lines = snapshot.lines();
    let header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["kind"], "StrategyHostSnapshot");
    let mut found = BTreeMap::new();
    for line in lines {
        let entry: Value = serde_json::from_str(line).unwrap();
        if let Some(name) = entry["key"]
            .as_str()
            .and_then(|k| k.strip_prefix("/configmaps/default/"))
        {
            let n = entry["object"]["data"]["n"].clone();
            found.insert(name.to_owned(), (entry["modRevision"].as_u64().unwrap(), n));
        }
    }
    (header["revision"].as_u64().unwrap(), found)
}

/// The ConfigMaps in `default` a server lists: name → (resourceVersion, data.n).
fn configmaps_on(host: &HostProcess) -> BTreeMap<String, (u64, Value)> {
    let list = call("GET", &host.url(CONFIGMAPS), None).unwrap().json();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap().to_owned();
            (name, (rv(o), o["data"]["n"].clone()))
        })
        .collect()
}

fn snapshot_of(host: &HostProcess) -> String {
    let reply = call("GET", &host.url("/storage/snapshot"), None).unwrap();
    assert_eq!(reply.code, 200, "{}", reply.body);
    reply.body
}

fn restore(file: &Path, target: &[&str]) -> String {
    let mut args = vec!["store", "restore", file.to_str().unwrap()];
    args.extend_from_slice(target);
    let (status, said) = run_to_exit(&args).unwrap();
    assert!(status.success(), "restore failed: {said}");
    said
}

#[test]
fn a_snapshot_under_write_load_restores_and_migrates_to_etcd_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let data = |name: &str| dir.path().join(name).display().to_string();
    let source = HostProcess::start(&["--data-dir", &data("source")]).unwrap();

    // Two writers create and update ConfigMaps, recording every acknowledged write.
    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(Mutex::new(Vec::<(String, u64, u64)>::new()));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (stop, acknowledged) = (stop.clone(), acknowledged.clone());
            let url = source.url(CONFIGMAPS);
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    i += 1;
                    let name = format!("w{w}-{}", i / 2);
                    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name}, "data": {"n": i.to_string()}});
                    // Even: create; odd: update what the previous step created.
                    let reply = if i.is_multiple_of(2) {
                        call("POST", &url, Some(&cm)).unwrap()
                    } else {
                        call("PUT", &format!("{url}/{name}"), Some(&cm)).unwrap()
                    };
                    if reply.code == 404 {
                        continue; // the first update, before any create
                    }
                    assert!(reply.code == 200 || reply.code == 201, "{}", reply.body);
                    acknowledged
                        .lock()
                        .unwrap()
                        .push((name, rv(&reply.json()), i));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let snapshot = snapshot_of(&source);
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().unwrap();
    }

    // Exactly the acknowledged writes up to the snapshot's revision: each object at its last.
    let (revision, in_snapshot) = configmaps_in(&snapshot);
    let mut expected = BTreeMap::new();
    let acknowledged = acknowledged.lock().unwrap().clone();
    for (name, at, n) in &acknowledged {
        if *at <= revision {
            let last = expected.entry(name.clone()).or_insert((0, Value::Null));
            if *at > last.0 {
                *last = (*at, json!(n.to_string()));
            }
        }
    }
    assert!(
        acknowledged.iter().any(|(_, at, _)| *at > revision),
        "writes went on during the snapshot"
    );
    assert!(expected.len() > 10, "only {} objects", expected.len());
    assert_eq!(in_snapshot, expected);
    let file = dir.path().join("snapshot.jsonl");
    std::fs::write(&file, &snapshot).unwrap();
    let (ok, said) = run_to_exit(&["store", "status", file.to_str().unwrap()]).unwrap();
    assert!(ok.success(), "{said}");

    // Restored into a new data directory: every object at its resourceVersion.
    restore(&file, &["--data-dir", &data("restored")]);
    let restored = HostProcess::start(&["--data-dir", &data("restored")]).unwrap();
    assert_eq!(configmaps_on(&restored), expected);
    let next = call(
        "POST",
        &restored.url(CONFIGMAPS),
        Some(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"}})),
    )
    .unwrap();
    assert!(rv(&next.json()) > revision, "{}", next.body);
    // A second restore into it is refused.
    let (status, said) = run_to_exit(&[
        "store",
        "restore",
        file.to_str().unwrap(),
        "--data-dir",
        &data("restored"),
    ])
    .unwrap();
    assert!(
        !status.success() && said.contains("holds a store already"),
        "{said}"
    );

    // Moved to etcd: the same objects, their resourceVersions in the same order.
    let etcd = EtcdServer::start().unwrap();
    let endpoint = etcd.endpoint();
    restore(
        &file,
        &["--etcd-servers", &endpoint, "--etcd-prefix", "/moved"],
    );
    let on_etcd =
        HostProcess::start(&["--etcd-servers", &endpoint, "--etcd-prefix", "/moved"]).unwrap();
    let moved = configmaps_on(&on_etcd);
    let order = |m: &BTreeMap<String, (u64, Value)>| {
        let mut names: Vec<_> = m.iter().map(|(k, (at, _))| (*at, k.clone())).collect();
        names.sort();
        names.into_iter().map(|(_, k)| k).collect::<Vec<_>>()
    };
    assert_eq!(order(&moved), order(&expected));
    let data_of = |m: &BTreeMap<String, (u64, Value)>| {
        m.iter()
            .map(|(k, (_, n))| (k.clone(), n.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(data_of(&moved), data_of(&expected));

    // And back from etcd into an embedded store.
    let back = dir.path().join("back.jsonl");
    std::fs::write(&back, snapshot_of(&on_etcd)).unwrap();
    restore(&back, &["--data-dir", &data("back")]);
    let home = HostProcess::start(&["--data-dir", &data("back")]).unwrap();
    assert_eq!(configmaps_on(&home), moved);
}
