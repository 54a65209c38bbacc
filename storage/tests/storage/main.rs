//! The storage tests, one binary: the conformance suite (`storage::testing`) against the
//! embedded store, etcd3 (real etcds started here) and the cacher over each, and the embedded
//! store's crash test. Run by libtest-mimic, as the suite's cases are built at run time.

mod cacher_embedded;
mod cacher_etcd3;
mod common;
mod embedded;
mod embedded_crash;
mod etcd3;

fn main() {
    if embedded_crash::run_as_child() {
        return;
    }
    let args = libtest_mimic::Arguments::from_args();
    let (etcd3, etcds) = etcd3::cases();
    let (cacher_etcd3, etcd_pool) = cacher_etcd3::cases();
    let trials = [
        embedded::cases(),
        etcd3,
        cacher_embedded::cases(),
        cacher_etcd3,
        embedded_crash::cases(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    // The etcds stop once every case is done.
    drop((etcds, etcd_pool));
    conclusion.exit();
}
