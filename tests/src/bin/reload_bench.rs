//! `reload-bench`: how long a hot reload takes, from the moment a new module version is written
//! (a file in the strategy directory, or a `StrategyModule` object POSTed) to the first request
//! served by it, while clients keep creating objects. Each round offers a version with a fresh
//! digest, so every swap includes compiling the module.
//!
//! `cargo build --release --workspace --bins && target/release/reload-bench [--rounds 10]`

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use base64::Engine as _;
use serde_json::{json, Value};
use strategy_host_e2e::load::CreateLoad;
use strategy_host_e2e::{call, deployment, deployment_crd, HostProcess};

const DEPLOYMENTS: &str = "/apis/apps.example.com/v1/namespaces/default/deployments";
const MODULES: &str = "/apis/strategyhost.io/v1alpha1/strategymodules";
const WAIT: Duration = Duration::from_secs(30);

fn defaulted(mark: Option<&Value>) -> bool {
    mark == Some(&json!(1))
}

/// The Deployment module with a custom section naming `round`: a new digest, the same code.
fn version(round: usize) -> anyhow::Result<Vec<u8>> {
    let mut bytes = std::fs::read(strategy_artifacts::DEPLOYMENT)?;
    let name = b"round";
    let payload = round.to_string();
    bytes.push(0);
    bytes.push((1 + name.len() + payload.len()) as u8);
    bytes.push(name.len() as u8);
    bytes.extend_from_slice(name);
    bytes.extend_from_slice(payload.as_bytes());
    Ok(bytes)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{what}: rounds={} p50={:.0}ms max={:.0}ms",
        times.len(),
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        times.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    );
}

fn main() -> anyhow::Result<()> {
    let mut rounds = 10usize;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--rounds" => rounds = args.next().context("--rounds needs a value")?.parse()?,
            other => bail!("unknown flag {other}"),
        }
    }
    let dir = tempfile::tempdir()?;
    let strategies = dir.path().join("strategies");
    std::fs::create_dir(&strategies)?;
    let host = HostProcess::start(&[
        "--data-dir",
        &dir.path().join("data").display().to_string(),
        "--strategy-dir",
        &strategies.display().to_string(),
    ])?;
    let r = call(
        "POST",
        &host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        Some(&deployment_crd()),
    )?;
    if r.code != 201 {
        bail!(
            "creating the Deployment CRD answered {}: {}",
            r.code,
            r.body
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    let load = CreateLoad::start(&host.url(DEPLOYMENTS), 4, "/spec/replicas", |n| {
        deployment(&format!("d{n}"), "web")
    });
    let (mut dir_in, mut dir_out, mut api_in, mut api_out) = (vec![], vec![], vec![], vec![]);
    let file = strategies.join("deployments.wasm");
    for round in 0..rounds {
        // The directory: write (to a temporary name, then rename), then remove.
        let tmp = strategies.join(".deployments.tmp");
        std::fs::write(&tmp, version(2 * round)?)?;
        let written = Instant::now();
        std::fs::rename(&tmp, &file)?;
        let s = load
            .wait_for(written, WAIT, defaulted)
            .context("the directory's module never served")?;
        dir_in.push(s.done - written);
        let removed = Instant::now();
        std::fs::remove_file(&file)?;
        let s = load
            .wait_for(removed, WAIT, |m| !defaulted(m))
            .context("the default strategy never came back")?;
        dir_out.push(s.done - removed);

        // The API: POST a StrategyModule, then DELETE it.
        let object = json!({
            "apiVersion": "strategyhost.io/v1alpha1", "kind": "StrategyModule",
            "metadata": {"name": "deployments"},
            "spec": {"resource": {"group": "apps.example.com", "kind": "Deployment"},
                     "module": base64::engine::general_purpose::STANDARD.encode(version(2 * round + 1)?)}
        });
        let posted = Instant::now();
        let r = call("POST", &host.url(MODULES), Some(&object))?;
        if r.code != 201 {
            bail!("POST StrategyModule answered {}: {}", r.code, r.body);
        }
        let s = load
            .wait_for(posted, WAIT, defaulted)
            .context("the API's module never served")?;
        api_in.push(s.done - posted);
        let deleted = Instant::now();
        let r = call("DELETE", &host.url(&format!("{MODULES}/deployments")), None)?;
        if r.code != 200 {
            bail!("DELETE StrategyModule answered {}: {}", r.code, r.body);
        }
        let s = load
            .wait_for(deleted, WAIT, |m| !defaulted(m))
            .context("the default strategy never came back")?;
        api_out.push(s.done - deleted);
    }
    let samples = load.stop();
    let failed = samples.iter().filter(|s| s.code != 201).count();
    report("directory write -> first request on the new module", dir_in);
    report("directory remove -> first request on the default", dir_out);
    report(
        "StrategyModule POST -> first request on the new module",
        api_in,
    );
    report(
        "StrategyModule DELETE -> first request on the default",
        api_out,
    );
    println!(
        "creates during the run: {} ({failed} failed)",
        samples.len()
    );
    if failed > 0 {
        bail!("{failed} creates failed during reloads");
    }
    Ok(())
}
