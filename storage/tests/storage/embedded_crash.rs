//! Crash test of the embedded store: a child process writes as fast as it can and reports each
//! acknowledged write; the parent kills it with SIGKILL mid-stream, reopens the data directory
//! and checks that every acknowledged write is there with the revision it was acknowledged at.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtest_mimic::{Failed, Trial};
use serde_json::json;
use strategy_host_storage::embedded::{EmbeddedConfig, EmbeddedStore};
use strategy_host_storage::{GetOptions, Storage};

/// Set in the child: the data directory to write into.
const CHILD_ENV: &str = "STRATEGY_HOST_CRASH_CHILD_DIR";

/// In the child this test binary starts: writes until killed, and returns true.
pub(crate) fn run_as_child() -> bool {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return false;
    };
    child_writes_forever(&dir);
    true
}

/// The crash case.
pub(crate) fn cases() -> Vec<Trial> {
    vec![Trial::test(
        "embedded_crash::acknowledged_writes_survive_sigkill",
        acknowledged_writes_survive_sigkill,
    )]
}

fn config(dir: &str) -> EmbeddedConfig {
    let mut c = EmbeddedConfig::new(dir);
    c.compaction_interval = None;
    c
}

/// The child: 16 concurrent writers, each acknowledged create printed as `key rev`.
fn child_writes_forever(dir: &str) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let store = Arc::new(EmbeddedStore::open(config(dir)).await.expect("open"));
        let mut tasks = Vec::new();
        for w in 0..16 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0.. {
                    // The pid keeps keys of successive child processes apart.
                    let name = format!("p{}-w{w}-{i}", std::process::id());
                    let key = format!("/crash/objs/ns/{name}");
                    let obj = json!({"metadata": {"name": name}, "spec": {"i": i}});
                    let created = store.create(&key, obj).await.expect("create");
                    let rv = created["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .to_string();
                    println!("{key} {rv}");
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
}

fn acknowledged_writes_survive_sigkill() -> Result<(), Failed> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data = dir.path().join("data").display().to_string();
    let mut acked = BTreeMap::new();
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
            .env(CHILD_ENV, &data)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| e.to_string())?;
        let stdout = child.stdout.take().expect("piped");
        let mut lines = BufReader::new(stdout).lines();
        let started = Instant::now();
        let mut this_round = 0;
        // Kill after a few hundred acknowledgements (or a second), mid-stream.
        while this_round < 300 + round * 100 && started.elapsed() < Duration::from_secs(10) {
            match lines.next() {
                Some(Ok(line)) => {
                    let (key, rv) = line.split_once(' ').ok_or("bad child line")?;
                    acked.insert(
                        key.to_string(),
                        rv.parse::<u64>().map_err(|e| e.to_string())?,
                    );
                    this_round += 1;
                }
                _ => return Err("child stopped writing".into()),
            }
        }
        child.kill().map_err(|e| e.to_string())?; // SIGKILL
        let _ = child.wait();
        if this_round == 0 {
            return Err("child acknowledged nothing".into());
        }
    }
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    rt.block_on(async {
        let store = EmbeddedStore::open(config(&data))
            .await
            .map_err(|e| format!("reopen after SIGKILL: {e}"))?;
        for (key, rv) in &acked {
            let obj = store
                .get(key, GetOptions::default())
                .await
                .map_err(|e| format!("acknowledged {key} lost: {e}"))?
                .ok_or(format!("acknowledged {key} lost"))?;
            let got = obj["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default();
            if got != rv.to_string() {
                return Err(format!("{key}: acknowledged at {rv}, reads {got}").into());
            }
        }
        let max = acked.values().max().copied().unwrap_or(0);
        let current = store.current_revision().await.map_err(|e| e.to_string())?;
        if current < max {
            return Err(format!("revision went back: {current} < {max}").into());
        }
        let next = store
            .create(
                "/crash/objs/ns/after",
                json!({"metadata": {"name": "after"}}),
            )
            .await
            .map_err(|e| e.to_string())?;
        let next_rv: u64 = next["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        if next_rv <= max {
            return Err(format!("revision reused after restart: {next_rv} <= {max}").into());
        }
        Ok(())
    })
}
