//! Registry tests with a native test strategy over the embedded store: warnings, field errors,
//! strategy failures, after hooks, create-on-update and conditional updates.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{Error, Registry, RequestScope, UpdateFn};
use crate::storage::embedded::{EmbeddedConfig, EmbeddedStore};
use crate::storage::Storage;
use crate::strategy::StrategyResolver;
use crate::strategy::{
    Admission, FieldError, FieldErrorKind, Strategy, StrategyContext, StrategyError,
};

/// A native strategy exercising every phase: refuses `spec.size > 10`, warns on `spec.size == 7`,
/// fails outright on `spec.size == 13`, allows create-on-update and requires resourceVersions.
#[derive(Default)]
struct TestStrategy {
    after_creates: AtomicUsize,
}

#[async_trait]
impl Strategy for TestStrategy {
    fn name(&self) -> &str {
        "test-strategy"
    }
    async fn before_create(
        &self,
        _: &StrategyContext,
        obj: &mut Value,
    ) -> Result<Admission, StrategyError> {
        let size = obj
            .pointer("/spec/size")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if size == 13 {
            return Err(StrategyError {
                module: "test-strategy".into(),
                reason: "unlucky number".into(),
            });
        }
        obj["spec"]["stamped"] = json!(true);
        let mut a = Admission::default();
        if size > 10 {
            a.field_errors.push(FieldError {
                kind: FieldErrorKind::Invalid,
                field: "spec.size".into(),
                detail: format!("{size}: must be at most 10"),
            });
        }
        if size == 7 {
            a.warnings.push("seven is deprecated".into());
        }
        Ok(a)
    }
    async fn before_update(
        &self,
        ctx: &StrategyContext,
        new: &mut Value,
        _old: &Value,
    ) -> Result<Admission, StrategyError> {
        self.before_create(ctx, new).await
    }
    fn allow_create_on_update(&self) -> bool {
        true
    }
    fn allow_unconditional_update(&self) -> bool {
        false
    }
    async fn after_create(&self, _: &StrategyContext, _: &Value) -> Result<(), StrategyError> {
        self.after_creates.fetch_add(1, Ordering::SeqCst);
        Err(StrategyError {
            module: "test-strategy".into(),
            reason: "hooks never undo writes".into(),
        })
    }
}

struct Resolver(Arc<TestStrategy>);

impl StrategyResolver for Resolver {
    fn strategy(&self, _: &str, _: &str) -> Arc<dyn Strategy> {
        self.0.clone()
    }
}

fn crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "things.test.io"},
        "spec": {"group": "test.io", "scope": "Cluster", "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "storage": true}, {"name": "v2", "served": true, "storage": false}]}})
}

fn scope(version: &str) -> RequestScope {
    RequestScope {
        version: version.into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_native_strategy_drives_every_phase() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Storage> = Arc::new(
        EmbeddedStore::open(EmbeddedConfig::new(dir.path().join("db")))
            .await
            .unwrap(),
    );
    let strategy = Arc::new(TestStrategy::default());
    let registry = Registry::new(store.clone(), Arc::new(Resolver(strategy.clone())));
    registry.start();
    let crds = registry.crds();
    let created = crds.store.create(&scope("v1"), crd()).await.unwrap();
    let rv = created.object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    registry.wait_observed(rv, Duration::from_secs(5)).await;
    let things = registry.resolve("test.io", "v1", "things").expect("served");
    assert!(
        registry.resolve("test.io", "v2", "things").is_some(),
        "every served version"
    );

    let obj = |name: &str, size: i64| json!({"apiVersion": "test.io/v1", "kind": "Thing", "metadata": {"name": name}, "spec": {"size": size}});
    let out = things
        .store
        .create(&scope("v1"), obj("a", 7))
        .await
        .unwrap();
    // The strategy's warning, then its After hook's failure (hooks finish before the answer).
    assert_eq!(out.warnings.len(), 2, "{:?}", out.warnings);
    assert_eq!(out.warnings[0], "seven is deprecated");
    assert!(
        out.warnings[1].starts_with("after_create hook failed (the write stands)")
            && out.warnings[1].contains("hooks never undo writes"),
        "{:?}",
        out.warnings
    );
    assert_eq!(out.object["spec"]["stamped"], true);
    match things
        .store
        .create(&scope("v1"), obj("b", 11))
        .await
        .unwrap_err()
    {
        Error::Invalid { causes, .. } => assert_eq!(causes[0].field, "spec.size"),
        other => panic!("{other:?}"),
    }
    let failed = things
        .store
        .create(&scope("v1"), obj("c", 13))
        .await
        .unwrap_err();
    let status = crate::api::status::Status::from(&failed);
    assert_eq!(status.code, 500);
    assert!(
        status.message.contains("test-strategy") && status.message.contains("unlucky"),
        "{}",
        status.message
    );
    // The after hook failed, yet the object stays.
    assert_eq!(strategy.after_creates.load(Ordering::SeqCst), 1);
    assert!(things
        .store
        .get(&scope("v1"), "a", Default::default())
        .await
        .is_ok());
    // Read at v2: same object, v2 apiVersion (conversion None).
    let v2 = things
        .store
        .get(&scope("v2"), "a", Default::default())
        .await
        .unwrap();
    assert_eq!(v2["apiVersion"], "test.io/v2");

    // No unconditional updates with this strategy: 422 on a missing resourceVersion.
    let put = |o: Value| -> UpdateFn { Arc::new(move |_| Ok(o.clone())) };
    let err = things
        .store
        .update(&scope("v1"), "a", put(obj("a", 3)))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err:?}");
    let mut with_rv = obj("a", 3);
    with_rv["metadata"]["resourceVersion"] = out.object["metadata"]["resourceVersion"].clone();
    let updated = things
        .store
        .update(&scope("v1"), "a", put(with_rv.clone()))
        .await
        .unwrap();
    assert_eq!(updated.object["metadata"]["generation"], 2);
    let err = things
        .store
        .update(&scope("v1"), "a", put(with_rv))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err:?}");
    // Create on update.
    let made = things
        .store
        .update(&scope("v1"), "fresh", put(obj("fresh", 2)))
        .await
        .unwrap();
    assert!(made.created);
    assert_eq!(made.object["metadata"]["generation"], 1);
    assert!(made.object["metadata"]["uid"].is_string());
}
