//! One strategy call on a 1 KiB Deployment: prepare_for_create, validate, warnings and
//! canonicalize (the registry's create phase), through the wasm runtime, on the module's kept
//! instance.
//!
//! `cargo bench -p strategy-host --bench strategy_call` prints criterion's estimates and then the
//! p50/p99 of plain timing loops: on the calling thread (`StrategyModule::call`) and as the
//! registry calls it from an async task (`Strategy::before_create`, JSON in and out included);
//! then both again with a fresh instance per call (instances recycled after every session, as
//! modules without `_initialize` are served), the baseline.

use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
#[path = "common/deployment.rs"]
mod deployment;
use deployment::{context, object, resource};
use strategy_host::strategy::Strategy;
use strategy_host::wasm::WasmStrategy;
use strategy_host::wasm_runtime::{
    abi, CallerInfo, InstanceReuse, Runtime, RuntimeConfig, StrategyModule,
};

fn setup(instance_reuse: InstanceReuse) -> (Runtime, StrategyModule) {
    let config = RuntimeConfig {
        max_instances: 64,
        instance_reuse,
        ..RuntimeConfig::default()
    };
    let rt = Runtime::new(config).unwrap();
    let module =
        StrategyModule::load(&rt, &std::fs::read(strategy_artifacts::DEPLOYMENT).unwrap()).unwrap();
    (rt, module)
}

fn bench(c: &mut Criterion) {
    let (rt, module) = setup(InstanceReuse::default());
    let obj = object();
    let bytes = serde_json::to_vec(&obj).unwrap();
    assert!((1000..1100).contains(&bytes.len()), "{}", bytes.len());
    let request = abi::Request {
        context: None,
        operation: Some(abi::request::Operation::BeforeCreate(
            abi::BeforeCreateRequest { object: bytes },
        )),
    };
    let caller = CallerInfo {
        module: "deployments".into(),
        request_id: String::new(),
        resource: resource(),
        dry_run: false,
    };
    let call = || module.call(&rt, caller.clone(), &request).unwrap();
    assert!(call().field_errors.is_empty());
    c.bench_function("wasm create phase, 1 KiB object (calling thread)", |b| {
        b.iter(call)
    });

    let tokio = tokio::runtime::Runtime::new().unwrap();
    let again = StrategyModule::load(&rt, &std::fs::read(strategy_artifacts::DEPLOYMENT).unwrap());
    let strategy = WasmStrategy::new(rt.clone(), std::sync::Arc::new(again.unwrap()));
    let ctx = context();
    c.bench_function(
        "wasm create phase, 1 KiB object (Strategy::before_create)",
        |b| {
            b.to_async(&tokio).iter(|| async {
                let mut o = obj.clone();
                strategy.before_create(&ctx, &mut o).await.unwrap()
            })
        },
    );

    drop(tokio);
    timing_loops("kept instance", InstanceReuse::default());
    let fresh = InstanceReuse {
        max_sessions: 1,
        ..InstanceReuse::default()
    };
    timing_loops("fresh instance per call", fresh);
}

/// The p50/p99 of the create phase on the calling thread, of a call that decodes no object,
/// and of the create phase from a task, with instances kept as `instance_reuse` says.
fn timing_loops(label: &str, instance_reuse: InstanceReuse) {
    let (rt, module) = setup(instance_reuse);
    let obj = object();
    let request = abi::Request {
        context: None,
        operation: Some(abi::request::Operation::BeforeCreate(
            abi::BeforeCreateRequest {
                object: serde_json::to_vec(&obj).unwrap(),
            },
        )),
    };
    let caller = CallerInfo {
        module: "deployments".into(),
        request_id: String::new(),
        resource: resource(),
        dry_run: false,
    };
    let timed = |request: &abi::Request| -> Vec<Duration> {
        (0..SAMPLES)
            .map(|_| {
                let t = Instant::now();
                module.call(&rt, caller.clone(), request).unwrap();
                t.elapsed()
            })
            .collect()
    };
    report(label, "calling thread", timed(&request));
    // The fixed part: an instance answering a call that decodes no object.
    let nop = abi::Request {
        context: None,
        operation: Some(abi::request::Operation::AllowCreateOnUpdate(
            abi::AllowCreateOnUpdateRequest {},
        )),
    };
    report(
        label,
        "calling thread, no object (allow_create_on_update)",
        timed(&nop),
    );
    // On a runtime worker, as the registry's request tasks call it.
    let strategy = WasmStrategy::new(rt.clone(), std::sync::Arc::new(module));
    let ctx = context();
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let from_task = tokio.spawn(async move {
        let mut samples = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            let mut o = obj.clone();
            let t = Instant::now();
            strategy.before_create(&ctx, &mut o).await.unwrap();
            samples.push(t.elapsed());
        }
        samples
    });
    report(
        label,
        "Strategy::before_create",
        tokio.block_on(from_task).unwrap(),
    );
}

const SAMPLES: usize = 20_000;

/// Prints the p50 and p99 of `samples`.
fn report(label: &str, path: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let p = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    println!(
        "wasm create phase, 1 KiB object, {label} ({path}): p50 {:?}  p99 {:?}  (n = {})",
        p(0.50),
        p(0.99),
        samples.len()
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bench
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
