//! The storage conformance suite: every `Storage` implementation (embedded, etcd3, and the
//! cacher over each) runs these cases unchanged.
//!
//! Kubernetes' `k8s.io/apiserver/pkg/storage/testing` is the reference for what is checked;
//! the cases here are our own. A backend's test file builds a [`StoreFactory`] and hands
//! [`trials`] to `libtest_mimic`, so each case is reported as its own test.

mod create_get;
mod delete;
mod fixtures;
mod list;
mod update;
mod watch;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use libtest_mimic::{Failed, Trial};

use super::{Result, Storage};

pub use fixtures::{
    create, exact, key, modify, modifying, names, object, object_with_labels, rv, set_size,
    update_size,
};

/// Compacts the store under test up to (and excluding) a revision, as etcd's compaction does.
pub type Compactor = Arc<dyn Fn(u64) -> BoxFuture<'static, Result<()>> + Send + Sync>;

/// A store handed to one case.
#[derive(Clone)]
pub struct TestStore {
    /// The store under test.
    pub storage: Arc<dyn Storage>,
    /// Compacts the store's history.
    pub compact: Compactor,
}

/// Whether a case compacts history. Compaction is global to a store (to a whole etcd), so
/// backends that share one store between cases must give compacting cases their own, and the
/// suite runs compacting cases one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// The case never compacts; it may share a backend with other cases (keys are isolated).
    Shared,
    /// The case compacts; it must not share its backend with `Shared` cases.
    Compacting,
}

/// Makes a fresh, empty store for one case.
pub type StoreFactory = Arc<dyn Fn(Isolation) -> BoxFuture<'static, TestStore> + Send + Sync>;

type Case = fn(TestStore) -> BoxFuture<'static, ()>;

macro_rules! case_list {
    ($($module:ident :: $name:ident $(($iso:ident))?),* $(,)?) => {
        vec![$(
            (
                stringify!($name),
                (|s: TestStore| $module::$name(s).boxed()) as Case,
                case_list!(@iso $($iso)?),
            )
        ),*]
    };
    (@iso) => { Isolation::Shared };
    (@iso $iso:ident) => { Isolation::$iso };
}

/// Every case of the suite: its name, its body, and whether it compacts.
fn cases() -> Vec<(&'static str, Case, Isolation)> {
    case_list![
        create_get::run_create,
        create_get::run_create_already_exists,
        create_get::run_create_with_resource_version_rejected,
        create_get::run_get_resource_versions,
        create_get::run_get_not_found,
        create_get::run_get_shared_is_get,
        create_get::run_key_validation,
        delete::run_delete_unconditional,
        delete::run_delete_preconditions,
        delete::run_delete_with_stale_cached_object,
        delete::run_delete_revalidates_after_concurrent_update,
        delete::run_delete_validation_refuses,
        update::run_update_not_found,
        update::run_update_creates_when_ignore_not_found,
        update::run_update_no_op_writes_nothing,
        update::run_update_writes_new_revision,
        update::run_update_retries_on_conflict,
        update::run_update_rereads_stale_hint,
        update::run_update_preconditions,
        update::run_update_aborted_writes_nothing,
        list::run_list_resource_versions,
        list::run_list_exact_sees_history,
        list::run_list_paging_is_consistent,
        list::run_list_remaining_item_count,
        list::run_list_selector_one_of_many_with_limit_one,
        list::run_list_continue_with_resource_version_rejected,
        list::run_list_compacted(Compacting),
        list::run_list_recursive_vs_single_key,
        list::run_list_predicates,
        list::run_count,
        watch::run_watch_added_modified_deleted,
        watch::run_watch_from_zero_replays_state,
        watch::run_watch_from_revision_sees_only_later,
        watch::run_watch_compacted(Compacting),
        watch::run_watch_scoping,
        watch::run_watch_predicate_transitions,
        watch::run_watch_slow_reader_blocks_nobody,
        watch::run_watch_cancel_closes_cleanly,
        watch::run_watch_concurrent_writers_in_order,
        watch::run_watch_progress_request,
    ]
}

/// How long one case may run before it counts as hung.
const CASE_TIMEOUT: Duration = Duration::from_secs(90);

/// Compacting cases of one test binary run one at a time.
static COMPACTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The suite as `libtest_mimic` trials named `{backend}::{case}`.
pub fn trials(backend: &str, factory: StoreFactory) -> Vec<Trial> {
    cases()
        .into_iter()
        .map(|(name, case, isolation)| {
            let factory = factory.clone();
            Trial::test(format!("{backend}::{name}"), move || {
                let _serial = (isolation == Isolation::Compacting)
                    .then(|| COMPACTING.lock().unwrap_or_else(|e| e.into_inner()));
                run_case(factory, case, isolation)
            })
        })
        .collect()
}

fn run_case(factory: StoreFactory, case: Case, isolation: Isolation) -> Result<(), Failed> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(format!("runtime: {e}")))?;
    runtime.block_on(async move {
        let store = factory(isolation).await;
        let body = AssertUnwindSafe(case(store)).catch_unwind();
        match tokio::time::timeout(CASE_TIMEOUT, body).await {
            Err(_) => Err(Failed::from(format!(
                "case did not finish within {CASE_TIMEOUT:?}"
            ))),
            Ok(Err(panic)) => Err(Failed::from(panic_message(&panic))),
            Ok(Ok(())) => Ok(()),
        }
    })
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "case panicked".to_string())
}
