//! Garbage-collection figures: how long a background cascade takes from an owner's delete to its
//! last dependent gone, beside the same client deleting the dependents itself (what `kubectl
//! delete` did before servers collected); and what owners with children cost the server at
//! rest (CPU and resident memory over an idle window), for comparing a server with its
//! collector on and off.

use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::{json, Value};

use crate::call;

/// The collection the figures use.
fn configmaps(server: &str) -> String {
    format!("{server}/api/v1/namespaces/default/configmaps")
}

fn configmap(name: &str, label: &str, owner: Option<&Value>) -> Value {
    let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"cascade": label}}, "data": {"k": "v"}});
    if let Some(owner) = owner {
        obj["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "v1", "kind": "ConfigMap",
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        }]);
    }
    obj
}

/// Runs `work(i)` for `0..count` from `clients` threads.
fn spread(
    clients: usize,
    count: usize,
    work: impl Fn(usize) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<()> {
    let clients = clients.max(1);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..clients)
            .map(|c| {
                let work = &work;
                s.spawn(move || (c..count).step_by(clients).try_for_each(work))
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().map_err(|_| anyhow::anyhow!("a client panicked"))?)
    })
}

/// Creates an owner labelled `label` and `dependents` children it owns; answers the owner.
fn family(server: &str, label: &str, dependents: usize, clients: usize) -> anyhow::Result<Value> {
    let base = configmaps(server);
    let made = call(
        "POST",
        &base,
        Some(&configmap(&format!("{label}-owner"), label, None)),
    )?;
    if made.code != 201 {
        bail!("creating the owner answered {}: {}", made.code, made.body);
    }
    let owner = made.json();
    spread(clients, dependents, |i| {
        let child = configmap(&format!("{label}-{i:06}"), label, Some(&owner));
        let r = call("POST", &base, Some(&child))?;
        if r.code != 201 {
            bail!("creating a dependent answered {}: {}", r.code, r.body);
        }
        Ok(())
    })?;
    Ok(owner)
}

/// Objects labelled `label` left (the owner included), at most `limit` counted.
fn left(server: &str, label: &str) -> anyhow::Result<usize> {
    let url = format!(
        "{}?labelSelector=cascade%3D{label}&limit=1",
        configmaps(server)
    );
    let r = call("GET", &url, None)?;
    if r.code != 200 {
        bail!("listing answered {}: {}", r.code, r.body);
    }
    Ok(r.json()["items"].as_array().map_or(0, Vec::len))
}

/// One cascade figure.
#[derive(Debug, Clone)]
pub struct CascadeFigure {
    /// Dependents per owner.
    pub dependents: usize,
    /// From the owner's delete to its last dependent gone, the server collecting.
    pub collected: Duration,
    /// The same client deleting the owner and every dependent itself, `clients` at a time.
    pub client_deleted: Duration,
}

impl CascadeFigure {
    /// `key=value` fields for the benchmark scripts.
    pub fn fields(&self) -> String {
        format!(
            "dependents={} collected_s={:.3} client_deleted_s={:.3} collected/client={:.2}",
            self.dependents,
            self.collected.as_secs_f64(),
            self.client_deleted.as_secs_f64(),
            self.collected.as_secs_f64() / self.client_deleted.as_secs_f64().max(1e-9)
        )
    }
}

/// Measures a background cascade of `dependents` beside a client deleting as many itself.
///
/// # Errors
/// A request fails, or the dependents are not gone within `timeout`.
pub fn cascade(
    server: &str,
    dependents: usize,
    clients: usize,
    timeout: Duration,
) -> anyhow::Result<CascadeFigure> {
    let run = format!("c{:x}{}", std::process::id(), dependents);
    let base = configmaps(server);
    // The baseline: the client deletes every object itself.
    let by_client = format!("{run}-client");
    family(server, &by_client, dependents, clients)?;
    let began = Instant::now();
    call("DELETE", &format!("{base}/{by_client}-owner"), None)?;
    spread(clients, dependents, |i| {
        let r = call("DELETE", &format!("{base}/{by_client}-{i:06}"), None)?;
        if r.code != 200 && r.code != 404 {
            bail!("deleting a dependent answered {}: {}", r.code, r.body);
        }
        Ok(())
    })?;
    let client_deleted = began.elapsed();
    // The server collects.
    let by_server = format!("{run}-gc");
    family(server, &by_server, dependents, clients)?;
    let began = Instant::now();
    let policy =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"});
    let r = call(
        "DELETE",
        &format!("{base}/{by_server}-owner"),
        Some(&policy),
    )?;
    if r.code != 200 {
        bail!("deleting the owner answered {}: {}", r.code, r.body);
    }
    while left(server, &by_server)? > 0 {
        if began.elapsed() > timeout {
            bail!("{dependents} dependents not collected within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(CascadeFigure {
        dependents,
        collected: began.elapsed(),
        client_deleted,
    })
}

/// CPU seconds (user + system) the process has used, from /proc.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let (utime, stime): (f64, f64) = (fields.get(11)?.parse().ok()?, fields.get(12)?.parse().ok()?);
    // Linux reports clock ticks of 1/100 s (USER_HZ).
    Some((utime + stime) / 100.0)
}

/// Creates `owners` owners with `children` each (unless the collection holds them already),
/// lets the server settle, then answers its CPU use (percent of one core) over an idle
/// `window` and its resident memory (kB).
///
/// # Errors
/// A request fails or the process cannot be read.
pub fn owners_at_rest(
    server: &str,
    pid: u32,
    owners: usize,
    children: usize,
    clients: usize,
    window: Duration,
) -> anyhow::Result<(f64, u64)> {
    let have = call(
        "GET",
        &format!("{}?resourceVersion=0&limit=1", configmaps(server)),
        None,
    )?;
    let holds = have.json()["metadata"]["remainingItemCount"]
        .as_u64()
        .unwrap_or(0);
    if (holds as usize) + 1 < owners * (children + 1) {
        spread(clients, owners, |o| {
            family(server, &format!("rest{o:05}"), children, 1).map(|_| ())
        })?;
    }
    std::thread::sleep(Duration::from_secs(5));
    let Some(before) = cpu_seconds(pid) else {
        bail!("cannot read /proc/{pid}/stat");
    };
    std::thread::sleep(window);
    let after = cpu_seconds(pid).unwrap_or(before);
    let rss = crate::load::figures::rss_kb(pid).unwrap_or(0);
    Ok(((after - before) / window.as_secs_f64() * 100.0, rss))
}
