//! The clients that run a single-object or list mode for `--seconds`: threads with an HTTP/1.1
//! connection each, or tasks over shared HTTP/2 connections, and the request each sends.

use std::time::{Duration, Instant};

use anyhow::bail;
use strategy_host_e2e::load::figures::Throughput;
use strategy_host_e2e::load::h2::H2Client;
use strategy_host_e2e::load::protobuf;
use strategy_host_e2e::load::resources::{change, lease, merge, Resource};
use strategy_host_e2e::{call, call_with};

use crate::{list_agent, Args};

/// Runs the mode from `--concurrency` threads (one HTTP/1.1 connection each) for `--seconds`.
pub fn run_clients(args: &Args, resource: &Resource, base: &str) -> anyhow::Result<Throughput> {
    let run = format!("{:x}", std::process::id());
    let deadline = Instant::now() + Duration::from_secs_f64(args.seconds);
    let interval = args
        .rate
        .map(|r| Duration::from_secs_f64(args.concurrency as f64 / r));
    let mut query = Vec::new();
    if !args.consistent {
        query.push("resourceVersion=0".to_owned());
    }
    if args.limit > 0 {
        query.push(format!("limit={}", args.limit));
    }
    let list_url = match query.is_empty() {
        true => base.to_owned(),
        false => format!("{base}?{}", query.join("&")),
    };
    let began = Instant::now();
    let results = std::thread::scope(|s| {
        let workers: Vec<_> = (0..args.concurrency)
            .map(|w| {
                let (run, list_url) = (&run, &list_url);
                s.spawn(move || -> anyhow::Result<(Vec<Duration>, u64, u64)> {
                    let (mut latencies, mut errors, mut bytes) = (Vec::new(), 0, 0);
                    let mut next = Instant::now()
                        + interval.map_or(Duration::ZERO, |i| i.mul_f64(w as f64 / 16.0));
                    let mut i = 0u64;
                    while Instant::now() < deadline {
                        if let Some(iv) = interval {
                            if let Some(wait) = next.checked_duration_since(Instant::now()) {
                                std::thread::sleep(wait);
                            }
                            next += iv;
                        }
                        let start = Instant::now();
                        let code = if args.mode == "list" {
                            let accept = args.protobuf.then_some(protobuf::PROTOBUF);
                            let (code, n) = list_agent::read(list_url, accept)?;
                            bytes += n;
                            code
                        } else {
                            one(args, resource, base, run, w, i)?
                        };
                        latencies.push(start.elapsed());
                        if code >= 300 {
                            errors += 1;
                        }
                        i += 1;
                    }
                    Ok((latencies, errors, bytes))
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().map_err(|_| anyhow::anyhow!("a worker panicked"))?)
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    let (mut all, mut errors, mut bytes) = (Vec::new(), 0, 0);
    for (l, e, b) in results {
        all.extend(l);
        errors += e;
        bytes += b;
    }
    Ok(Throughput::from_samples(
        all,
        errors,
        bytes,
        began.elapsed(),
    ))
}

/// One request of a single-object mode by client `w` on its `i`-th turn; its status code.
fn one(
    args: &Args,
    resource: &Resource,
    base: &str,
    run: &str,
    w: usize,
    i: u64,
) -> anyhow::Result<u16> {
    if args.mode == "renew" {
        let url = format!("{base}/seed-{run}-{w}");
        let mut held = call("GET", &url, None)?.json();
        held["spec"] = lease("", i)["spec"].clone();
        return Ok(call("PUT", &url, Some(&held))?.code);
    }
    let request = Planned::of(args, resource, run, w, i)?;
    let content_type = request.body.as_ref().map(|(_, t)| ("Content-Type", *t));
    Ok(call_with(
        request.method,
        &format!("{base}{}", request.path),
        request.body.as_ref().map(|(b, _)| b.as_slice()),
        content_type.as_slice(),
    )?
    .code)
}

/// One request of a single-object mode: what any client sends for it.
struct Planned {
    method: &'static str,
    /// Below the collection's path: `""` or `/name?query`.
    path: String,
    /// The body and its content type.
    body: Option<(Vec<u8>, &'static str)>,
}

impl Planned {
    /// Client `w`'s `i`-th request of `args.mode` (`run` names this invocation's objects).
    fn of(args: &Args, resource: &Resource, run: &str, w: usize, i: u64) -> anyhow::Result<Self> {
        let json = |v: &serde_json::Value| Some((v.to_string().into_bytes(), "application/json"));
        let (method, path, body) = match args.mode.as_str() {
            "create" => (
                "POST",
                String::new(),
                json(&resource.object(&format!("l-{run}-{w}-{i}"))),
            ),
            "get" => ("GET", format!("/seed-{run}-{}", i % 100), None),
            "cached-get" => (
                "GET",
                format!("/seed-{run}-{}?resourceVersion=0", i % 100),
                None,
            ),
            "update" => (
                "PATCH",
                format!("/seed-{run}-{}", (i + w as u64) % 100),
                Some((
                    change(&resource.name, i).to_string().into_bytes(),
                    "application/merge-patch+json",
                )),
            ),
            "apply" => {
                // The whole configuration, as a client applies its manifest, with the same
                // change the update mode patches.
                let name = format!("seed-{run}-{}", (i + w as u64) % 100);
                let mut body = resource.object(&name);
                merge(&mut body, &change(&resource.name, i));
                (
                    "PATCH",
                    format!("/{name}?fieldManager=api-load&force=true"),
                    Some((
                        body.to_string().into_bytes(),
                        "application/apply-patch+yaml",
                    )),
                )
            }
            other => bail!("unknown mode {other}"),
        };
        Ok(Planned { method, path, body })
    }
}

/// Runs the mode from `--concurrency` tasks over `--connections` HTTP/2 connections for
/// `--seconds` (paced as `run_clients` is).
pub async fn run_h2_clients(args: &Args, resource: &Resource) -> anyhow::Result<Throughput> {
    if !matches!(
        args.mode.as_str(),
        "create" | "get" | "cached-get" | "update" | "apply" | "renew"
    ) {
        bail!("--http2 serves create, get, cached-get, update, apply and renew");
    }
    let client = H2Client::connect(&args.server, args.connections).await?;
    let run = format!("{:x}", std::process::id());
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(args.seconds);
    let interval = args
        .rate
        .map(|r| Duration::from_secs_f64(args.concurrency as f64 / r));
    let began = Instant::now();
    let tasks: Vec<_> = (0..args.concurrency)
        .map(|w| {
            let (client, args, resource, run) =
                (client.clone(), args.clone(), resource.clone(), run.clone());
            tokio::spawn(async move {
                let (mut latencies, mut errors) = (Vec::new(), 0u64);
                let mut next = tokio::time::Instant::now()
                    + interval.map_or(Duration::ZERO, |i| i.mul_f64(w as f64 / 16.0));
                let mut i = 0u64;
                while tokio::time::Instant::now() < deadline {
                    if let Some(iv) = interval {
                        tokio::time::sleep_until(next).await;
                        next += iv;
                    }
                    let start = Instant::now();
                    let code = if args.mode == "renew" {
                        renew_h2(&client, resource.path, &run, w, i).await?
                    } else {
                        let request = Planned::of(&args, &resource, &run, w, i)?;
                        let path = format!("{}{}", resource.path, request.path);
                        client.call(request.method, &path, request.body).await?.0
                    };
                    latencies.push(start.elapsed());
                    if code >= 300 {
                        errors += 1;
                    }
                    i += 1;
                }
                anyhow::Ok((latencies, errors))
            })
        })
        .collect();
    let (mut all, mut errors) = (Vec::new(), 0);
    for task in tasks {
        let (latencies, e) = task.await??;
        all.extend(latencies);
        errors += e;
    }
    Ok(Throughput::from_samples(all, errors, 0, began.elapsed()))
}

/// One Lease renewal as client-go's leaderelection does it, over HTTP/2: GET client `w`'s
/// Lease, then PUT it back with the `i`-th renewTime; the PUT's status.
async fn renew_h2(
    client: &H2Client,
    collection: &str,
    run: &str,
    w: usize,
    i: u64,
) -> anyhow::Result<u16> {
    let path = format!("{collection}/seed-{run}-{w}");
    let (code, body) = client.call("GET", &path, None).await?;
    if code != 200 {
        return Ok(code);
    }
    let mut held: serde_json::Value = serde_json::from_slice(&body)?;
    held["spec"] = lease("", i)["spec"].clone();
    let body = (held.to_string().into_bytes(), "application/json");
    Ok(client.call("PUT", &path, Some(body)).await?.0)
}
