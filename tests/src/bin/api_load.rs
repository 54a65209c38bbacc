//! `api-load`: a load tool for a running strategy-host. Creates the example Widget CRD if it is
//! missing, then runs `create` (POST new Widgets), `get` (GET existing ones; `cached-get` at
//! resourceVersion=0), `update` (a merge PATCH) or `apply` (server-side apply of the whole object
//! with the same change) from N concurrent clients for a fixed time, optionally paced to a total rate, and
//! prints operations per second and p50/p90/p99 latency.
//!
//! `api-load --server http://127.0.0.1:8080 --mode create --concurrency 16 --seconds 10 [--rate 1000]
//! [--resource widgets|deployments|leases]` (deployments: the example Deployment, whose strategy is
//! the wasm module or, on `native-host`, the same code compiled in; leases: the built-in
//! `coordination.k8s.io` Lease). `--mode renew` is a leader-election renewal as client-go does
//! it: each client GETs its own Lease and PUTs it back with a new `renewTime`.
//!
//! Against a secure server (`https://`), set `STRATEGY_HOST_CA_FILE` to the CA to trust and
//! `STRATEGY_HOST_TOKEN` to a bearer token every request carries.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde_json::json;
use strategy_host_e2e::{call, deployment, deployment_crd, widget, widget_crd};

struct Args {
    server: String,
    mode: String,
    concurrency: usize,
    seconds: u64,
    rate: Option<f64>,
    resource: String,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        server: "http://127.0.0.1:8080".into(),
        mode: "create".into(),
        concurrency: 16,
        seconds: 10,
        rate: None,
        resource: "widgets".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--server" => args.server = value,
            "--mode" => args.mode = value,
            "--concurrency" => args.concurrency = value.parse()?,
            "--seconds" => args.seconds = value.parse()?,
            "--rate" => args.rate = Some(value.parse()?),
            "--resource" => args.resource = value,
            other => bail!("unknown flag {other}"),
        }
    }
    Ok(args)
}

/// A Gateway with three listeners (each of its listener rules has something to check).
fn gateway(name: &str, api_version: &str) -> serde_json::Value {
    json!({
        "apiVersion": api_version, "kind": "Gateway",
        "metadata": {"name": name},
        "spec": {
            "gatewayClassName": "example",
            "listeners": [
                {"name": "http", "protocol": "HTTP", "port": 80, "hostname": "shop.example.com"},
                {"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "shop.example.com",
                 "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-cert"}]}},
                {"name": "tcp", "protocol": "TCP", "port": 5432},
            ],
        },
    })
}

/// A ConfigMap of about 1 KiB of JSON.
fn config_map(name: &str, counter: u64) -> serde_json::Value {
    let mut cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "web", "team": "storefront"}},
        "data": {"counter": counter.to_string(), "LOG_LEVEL": "info", "FEATURE_FLAGS": "checkout-v2,search-suggest"},
    });
    let len = cm.to_string().len();
    cm["data"]["padding"] = json!("x".repeat(1024usize.saturating_sub(len + 14)));
    cm
}

/// The change the `update` mode patches (and `apply` applies) on its `i`-th call.
fn change(resource: &str, i: u64) -> serde_json::Value {
    match resource {
        "configmaps" => json!({"data": {"counter": (i % 50).to_string()}}),
        _ => json!({"spec": {"size": 1 + (i % 50)}}),
    }
}

/// A JSON merge patch (RFC 7386) of `patch` into `doc`.
fn merge(doc: &mut serde_json::Value, patch: &serde_json::Value) {
    match (doc, patch) {
        (serde_json::Value::Object(d), serde_json::Value::Object(p)) => {
            for (k, v) in p {
                merge(d.entry(k.clone()).or_insert(serde_json::Value::Null), v);
            }
        }
        (d, p) => *d = p.clone(),
    }
}

/// A leader-election Lease held by `name`, renewed for the `renewal`-th time.
fn lease(name: &str, renewal: u64) -> serde_json::Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name},
        "spec": {
            "holderIdentity": "controller-0", "leaseDurationSeconds": 15,
            "acquireTime": "2026-01-01T00:00:00.000000Z",
            "renewTime": format!("2026-01-01T00:{:02}:{:02}.{:06}Z", renewal / 60 % 60, renewal % 60, renewal % 1_000_000),
            "leaseTransitions": 0,
        },
    })
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let crds = format!(
        "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        args.server
    );
    let (crd, path, object): (_, _, fn(&str) -> serde_json::Value) = match args.resource.as_str() {
        "widgets" => (
            widget_crd(),
            "/apis/example.com/v1/namespaces/default/widgets",
            |name| widget(name, 1),
        ),
        "deployments" => (
            deployment_crd(),
            "/apis/apps.example.com/v1/namespaces/default/deployments",
            |name| deployment(name, "web"),
        ),
        "configmaps" => (
            serde_json::Value::Null,
            "/api/v1/namespaces/default/configmaps",
            |name| config_map(name, 0),
        ),
        // Gateway API's Gateway (its CRD loaded beforehand, e.g. by scripts/bench-cel.sh), with
        // its CEL rules, and the same CRD with its rules removed under another group.
        "gateways" => (
            serde_json::Value::Null,
            "/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways",
            |name| gateway(name, "gateway.networking.k8s.io/v1"),
        ),
        "gateways-norules" => (
            serde_json::Value::Null,
            "/apis/norules.gateway.example.com/v1/namespaces/default/gateways",
            |name| gateway(name, "norules.gateway.example.com/v1"),
        ),
        "leases" => (
            serde_json::Value::Null,
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            |name| lease(name, 0),
        ),
        other => bail!("unknown resource {other} (widgets, deployments, configmaps, gateways, gateways-norules or leases)"),
    };
    let r = if crd.is_null() {
        // A built-in kind: nothing to define.
        strategy_host_e2e::Reply {
            code: 201,
            warnings: Vec::new(),
            content_type: String::new(),
            body: String::new(),
        }
    } else {
        call("POST", &crds, Some(&crd))?
    };
    if r.code != 201 && r.code != 409 {
        bail!(
            "creating the {} CRD answered {}: {}",
            args.resource,
            r.code,
            r.body
        );
    }
    let run = format!("{:x}", std::process::id());
    let base = format!("{}{path}", args.server);
    // A new definition is served once the registry's watch sees it.
    let ready = Instant::now() + Duration::from_secs(10);
    while call("GET", &format!("{base}?limit=1"), None)?.code != 200 {
        if Instant::now() > ready {
            bail!("{base} is not served");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let seeds = args.concurrency.max(100);
    if args.mode != "create" {
        for i in 0..seeds {
            call("POST", &base, Some(&object(&format!("seed-{run}-{i}"))))?;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let interval = args
        .rate
        .map(|r| Duration::from_secs_f64(args.concurrency as f64 / r));
    let workers: Vec<_> = (0..args.concurrency)
        .map(|w| {
            let (base, mode, run, resource) = (
                base.clone(),
                args.mode.clone(),
                run.clone(),
                args.resource.clone(),
            );
            std::thread::spawn(move || -> anyhow::Result<(Vec<Duration>, u64)> {
                let mut latencies = Vec::new();
                let mut errors = 0;
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
                    let code = match mode.as_str() {
                        "create" => {
                            call("POST", &base, Some(&object(&format!("l-{run}-{w}-{i}"))))?.code
                        }
                        "get" => call("GET", &format!("{base}/seed-{run}-{}", i % 100), None)?.code,
                        "cached-get" => {
                            call(
                                "GET",
                                &format!("{base}/seed-{run}-{}?resourceVersion=0", i % 100),
                                None,
                            )?
                            .code
                        }
                        "update" => {
                            let body = change(&resource, i);
                            strategy_host_e2e::call_with(
                                "PATCH",
                                &format!("{base}/seed-{run}-{}", (i + w as u64) % 100),
                                Some(body.to_string().as_bytes()),
                                &[("Content-Type", "application/merge-patch+json")],
                            )?
                            .code
                        }
                        "apply" => {
                            // The whole configuration, as a client applies its manifest, with
                            // the same change the update mode patches.
                            let name = format!("seed-{run}-{}", (i + w as u64) % 100);
                            let mut body = object(&name);
                            merge(&mut body, &change(&resource, i));
                            strategy_host_e2e::call_with(
                                "PATCH",
                                &format!("{base}/{name}?fieldManager=api-load&force=true"),
                                Some(body.to_string().as_bytes()),
                                &[("Content-Type", "application/apply-patch+yaml")],
                            )?
                            .code
                        }
                        "renew" => {
                            let url = format!("{base}/seed-{run}-{w}");
                            let mut held = call("GET", &url, None)?.json();
                            held["spec"] = lease("", i)["spec"].clone();
                            call("PUT", &url, Some(&held))?.code
                        }
                        other => bail!("unknown mode {other}"),
                    };
                    latencies.push(start.elapsed());
                    if code >= 300 {
                        errors += 1;
                    }
                    i += 1;
                }
                Ok((latencies, errors))
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut errors = 0;
    for w in workers {
        let (l, e) = w
            .join()
            .map_err(|_| anyhow::anyhow!("a worker panicked"))??;
        all.extend(l);
        errors += e;
    }
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    println!(
        "resource={} mode={} concurrency={} ops={} errors={} ops/s={:.0} p50={:.2}ms p90={:.2}ms p99={:.2}ms",
        args.resource,
        args.mode,
        args.concurrency,
        all.len(),
        errors,
        all.len() as f64 / args.seconds as f64,
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.90).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
    );
    Ok(())
}
