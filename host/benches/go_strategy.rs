//! The Go port of the Deployment strategy beside the Rust one, in one run: module size, load
//! time from an empty cache with tiered compilation (serving from baseline code) and without
//! (waiting for Cranelift), then from the compilation cache, a kept instance's memory, and the
//! create phase on a 1 KiB Deployment as the registry calls it (`Strategy::before_create` from
//! an async task), p50/p99 over 2,000 alternating batches of ten calls each, on optimized code and on
//! baseline code; then the Go module under
//! recycle policies that replace its instance every N calls, to show what recycling costs at
//! p99.
//!
//! `cargo bench -p strategy-host --bench go_strategy`

use std::sync::Arc;
use std::time::{Duration, Instant};

use strategy_host::strategy::Strategy;
use strategy_host::wasm::WasmStrategy;
use strategy_host::wasm_runtime::{
    CompilerTier, InstanceReuse, Runtime, RuntimeConfig, StrategyModule,
};

#[path = "common/deployment.rs"]
mod deployment;
use deployment::{context as ctx, object};

const SAMPLES: usize = 20_000;

/// A runtime with `reuse`, caching compiled modules in `cache`.
fn runtime(reuse: InstanceReuse, cache: &std::path::Path) -> Runtime {
    tiered(reuse, cache, true)
}

/// A runtime with `reuse`, caching compiled modules in `cache`, with tiered compilation on or
/// off.
fn tiered(reuse: InstanceReuse, cache: &std::path::Path, tiered_compilation: bool) -> Runtime {
    Runtime::new(RuntimeConfig {
        max_instances: 64,
        instance_reuse: reuse,
        cache_dir: Some(cache.to_owned()),
        tiered_compilation,
        ..RuntimeConfig::default()
    })
    .unwrap()
}

/// Waits for `module`'s optimized code (Cranelift compiling in the background).
fn optimized(module: &StrategyModule) -> Duration {
    let t = Instant::now();
    while module.tier() != CompilerTier::Optimized {
        std::thread::sleep(Duration::from_millis(10));
    }
    t.elapsed()
}

/// Loads `path` on `rt` and prints its size and load times: the first load from an empty cache
/// with tiered compilation (ready on baseline code; then how long its optimized code took) and
/// without it (ready when Cranelift is done), then from the cache.
fn load(label: &str, rt: &Runtime, path: &str) -> Arc<StrategyModule> {
    let bytes = std::fs::read(path).unwrap();
    let cold = std::env::temp_dir().join(format!("{label}-cold-{}", std::process::id()));
    let untiered = tiered(InstanceReuse::default(), &cold, false);
    let t = Instant::now();
    let _ = StrategyModule::load(&untiered, &bytes).unwrap();
    let cranelift = t.elapsed();
    let _ = std::fs::remove_dir_all(&cold);
    let t = Instant::now();
    let module = StrategyModule::load(rt, &bytes).unwrap();
    let first = t.elapsed();
    let tier = module.tier().as_str();
    let later = optimized(&module);
    println!(
        "{label}: cold load {first:?} ({tier} code, optimized code {later:?} later); \
         without tiering {cranelift:?}",
    );
    let t = Instant::now();
    let _again = StrategyModule::load(rt, &bytes).unwrap();
    let again = t.elapsed();
    println!(
        "{label}: module {} KiB, load {first:?} (first), {again:?} (from the cache)",
        bytes.len() / 1024,
    );
    Arc::new(module)
}

/// Times `samples` create phases from an async task, after `warm_up` more.
fn time_creates(
    tokio: &tokio::runtime::Runtime,
    strategy: &WasmStrategy,
    warm_up: usize,
    samples: usize,
) -> Vec<Duration> {
    let obj = object();
    tokio.block_on(async move {
        let ctx = ctx();
        let mut times = Vec::with_capacity(samples);
        for i in 0..warm_up + samples {
            let mut o = obj.clone();
            let t = Instant::now();
            let adm = strategy.before_create(&ctx, &mut o).await.unwrap();
            if i >= warm_up {
                times.push(t.elapsed());
            }
            assert!(adm.field_errors.is_empty());
        }
        times
    })
}

/// Times `SAMPLES` create phases of each strategy in `ROUNDS` alternating batches and prints
/// each one's p50/p99 over all its batches, and the last side's p50 over the first's: this
/// machine's speed drifts by up to 2× from one second to the next, and alternating lets the
/// drift fall on both sides alike.
fn time_side_by_side(tokio: &tokio::runtime::Runtime, sides: &[(&str, WasmStrategy)]) {
    const ROUNDS: usize = 2000;
    for (_, strategy) in sides {
        time_creates(tokio, strategy, 1000, 0);
    }
    let mut times = vec![Vec::with_capacity(SAMPLES); sides.len()];
    for _ in 0..ROUNDS {
        for (side, (_, strategy)) in sides.iter().enumerate() {
            times[side].extend(time_creates(tokio, strategy, 0, SAMPLES / ROUNDS));
        }
    }
    let p50s: Vec<Duration> = sides
        .iter()
        .zip(times)
        .map(|((label, _), samples)| report(label, samples))
        .collect();
    println!(
        "{} / {}: p50 ratio {:.2}",
        sides[sides.len() - 1].0,
        sides[0].0,
        p50s[p50s.len() - 1].as_secs_f64() / p50s[0].as_secs_f64(),
    );
}

/// Prints the p50, p99 and max of `samples` and returns the p50.
fn report(label: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let p = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    println!(
        "{label}: create phase p50 {:?}  p99 {:?}  max {:?}  (n = {})",
        p(0.50),
        p(0.99),
        samples[samples.len() - 1],
        samples.len()
    );
    p(0.50)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let cache = std::env::temp_dir().join(format!("go-strategy-bench-{}", std::process::id()));
    let rt = runtime(InstanceReuse::default(), &cache);
    // `GO_STRATEGY_PROFILE=1 STRATEGY_HOST_WASM_PERFMAP=1 perf record -g cargo bench ...`: only
    // the Go module's create phase, ten times over, for a profile of the guest.
    if std::env::var_os("GO_STRATEGY_PROFILE").is_some() {
        let go = load("go", &rt, strategy_artifacts::GO_DEPLOYMENT);
        let strategy = WasmStrategy::new(rt.clone(), go);
        for _ in 0..10 {
            report("go", time_creates(&tokio, &strategy, 1000, SAMPLES));
        }
        return;
    }
    let rust = load("rust", &rt, strategy_artifacts::DEPLOYMENT);
    let go = load("go", &rt, strategy_artifacts::GO_DEPLOYMENT);
    time_side_by_side(
        &tokio,
        &[
            ("rust", WasmStrategy::new(rt.clone(), rust)),
            ("go", WasmStrategy::new(rt.clone(), go.clone())),
        ],
    );
    // `GO_STRATEGY_CALLS_ONLY=1`: the two create phases on optimized code, and nothing after.
    if std::env::var_os("GO_STRATEGY_CALLS_ONLY").is_some() {
        return;
    }
    let baseline = |path: &str| {
        let bytes = std::fs::read(path).unwrap();
        let module = Arc::new(StrategyModule::load_baseline(&rt, &bytes).unwrap());
        assert_eq!(module.tier(), CompilerTier::Baseline);
        WasmStrategy::new(rt.clone(), module)
    };
    time_side_by_side(
        &tokio,
        &[
            (
                "rust, baseline code",
                baseline(strategy_artifacts::DEPLOYMENT),
            ),
            (
                "go, baseline code",
                baseline(strategy_artifacts::GO_DEPLOYMENT),
            ),
        ],
    );
    println!(
        "go: kept instance memory {:?} KiB after {SAMPLES} calls",
        go.idle_instance_memory()
            .iter()
            .map(|b| b / 1024)
            .collect::<Vec<_>>()
    );
    for every in [10_000, 1_000, 100, 10] {
        let rt = runtime(
            InstanceReuse {
                max_sessions: every,
                ..InstanceReuse::default()
            },
            &cache,
        );
        let go = load(
            &format!("go, recycled every {every}"),
            &rt,
            strategy_artifacts::GO_DEPLOYMENT,
        );
        let strategy = WasmStrategy::new(rt.clone(), go);
        report(
            &format!("go, recycled every {every} calls"),
            time_creates(&tokio, &strategy, 1000, SAMPLES),
        );
    }
    let _ = std::fs::remove_dir_all(&cache);
}
