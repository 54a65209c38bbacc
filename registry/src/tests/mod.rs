//! Registry tests with a native test strategy over the embedded store: warnings, field errors,
//! strategy failures, after hooks, create-on-update and conditional updates; watches at another
//! version in `watch_versions.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{Error, Registry, RequestScope, UpdateFn};
use crate::strategy::StrategyResolver;
use crate::strategy::{
    Admission, Answer, FieldError, FieldErrorKind, Strategy, StrategyContext, StrategyError,
};

mod watch_versions;

/// A native strategy exercising every phase: refuses `spec.size > 10`, warns on `spec.size == 7`,
/// fails outright on `spec.size == 13`, allows create-on-update and requires resourceVersions.
#[derive(Default)]
struct TestStrategy {
    after_creates: AtomicUsize,
    /// Converts between v1 (`spec.size`) and v2 (`spec.count`) when set, counting objects.
    converting: bool,
    /// Also renames what it converts and labels it; answers `test.io/v9` for `spec.size` 9
    /// and a cut-off object for 8.
    tampering: bool,
    converted: AtomicUsize,
    convert_calls: AtomicUsize,
}

#[async_trait]
impl Strategy for TestStrategy {
    fn name(&self) -> &str {
        "test-strategy"
    }
    async fn before_create(&self, _: &StrategyContext, obj: &mut Value) -> Answer {
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
    async fn before_update(&self, ctx: &StrategyContext, new: &mut Value, _old: &Value) -> Answer {
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
    fn converts(&self) -> bool {
        self.converting
    }
    fn converter_id(&self) -> String {
        "test-converter".into()
    }
    async fn convert(
        &self,
        _: &crate::strategy::ResourceInfo,
        objects: Vec<Vec<u8>>,
        desired: &str,
    ) -> Result<Vec<Vec<u8>>, StrategyError> {
        self.converted.fetch_add(objects.len(), Ordering::SeqCst);
        self.convert_calls.fetch_add(1, Ordering::SeqCst);
        let (from, to) = match desired {
            "test.io/v2" => ("size", "count"),
            _ => ("count", "size"),
        };
        Ok(objects
            .into_iter()
            .map(|o| {
                let mut o: Value = serde_json::from_slice(&o).expect("JSON");
                if let Some(n) = o["spec"].as_object_mut().and_then(|s| s.remove(from)) {
                    o["spec"][to] = n;
                }
                o["apiVersion"] = desired.into();
                if self.tampering {
                    o["metadata"]["name"] = "renamed".into();
                    o["metadata"]["labels"] = json!({"converted": "yes"});
                    if o["spec"][to] == 9 {
                        o["apiVersion"] = "test.io/v9".into();
                    }
                    if o["spec"][to] == 8 {
                        return b"{\"apiVersion\": ".to_vec();
                    }
                }
                serde_json::to_vec(&o).expect("serializes")
            })
            .collect())
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
    let strategy = Arc::new(TestStrategy::default());
    let (registry, things) = serve_things(dir.path(), crd(), strategy.clone()).await;
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
    assert!(matches!(failed, Error::Strategy(_)), "{failed:?}");
    let message = failed.to_string();
    assert!(
        message.contains("test-strategy") && message.contains("unlucky"),
        "{message}"
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

/// A registry over a fresh embedded store serving the `things.test.io` definition `crd`
/// through `strategy`.
async fn serve_things(
    dir: &std::path::Path,
    crd: Value,
    strategy: Arc<TestStrategy>,
) -> (Arc<Registry>, super::ServedResource) {
    let registry = Registry::open_embedded(&dir.join("db"), Arc::new(Resolver(strategy)))
        .await
        .unwrap();
    registry.start();
    let created = registry
        .crds()
        .store
        .create(&scope("v1"), crd)
        .await
        .unwrap();
    let rv = created.object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    registry.wait_observed(rv, Duration::from_secs(5)).await;
    let things = registry.resolve("test.io", "v1", "things").expect("served");
    (registry, things)
}

/// `things.test.io` with a status subresource, through a fresh `TestStrategy`.
async fn served_things(dir: &std::path::Path) -> (Arc<Registry>, super::ServedResource) {
    let mut def = crd();
    def["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    serve_things(dir, def, Arc::default()).await
}

#[tokio::test]
async fn a_create_carrying_a_resource_version_is_refused_as_kubernetes_does() {
    let dir = tempfile::tempdir().unwrap();
    let (_registry, things) = served_things(dir.path()).await;
    let obj = json!({"apiVersion": "test.io/v1", "kind": "Thing",
        "metadata": {"name": "a", "resourceVersion": "12"}, "spec": {"size": 1}});
    let err = things.store.create(&scope("v1"), obj).await.unwrap_err();
    assert!(matches!(err, Error::ResourceVersionSetOnCreate), "{err:?}");
    assert_eq!(
        err.to_string(),
        "resourceVersion should not be set on objects to be created"
    );
    let missing = things
        .store
        .get(&scope("v1"), "a", Default::default())
        .await;
    assert!(matches!(missing, Err(Error::NotFound(_))), "nothing stored");
}

#[tokio::test]
async fn create_on_update_drops_client_status_like_create() {
    let dir = tempfile::tempdir().unwrap();
    let (_registry, things) = served_things(dir.path()).await;
    let with_status = |name: &str| {
        json!({"apiVersion": "test.io/v1", "kind": "Thing", "metadata": {"name": name},
            "spec": {"size": 1}, "status": {"ready": true}})
    };
    let created = things
        .store
        .create(&scope("v1"), with_status("posted"))
        .await
        .unwrap();
    assert!(
        created.object.get("status").is_none(),
        "create strips status"
    );
    let body = with_status("put");
    let input: UpdateFn = Arc::new(move |_| Ok(body.clone()));
    let made = things
        .store
        .update(&scope("v1"), "put", input)
        .await
        .unwrap();
    assert!(made.created);
    assert!(
        made.object.get("status").is_none(),
        "create-on-update strips status too: {}",
        made.object
    );
    assert_eq!(made.object["spec"]["stamped"], true, "the strategy ran");
}

#[tokio::test]
async fn a_module_may_change_only_labels_and_annotations_of_the_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let strategy = Arc::new(TestStrategy {
        converting: true,
        tampering: true,
        ..Default::default()
    });
    let (_registry, things) = serve_things(dir.path(), crd(), strategy.clone()).await;
    for (name, size) in [("a", 1), ("b", 2)] {
        let obj = json!({"apiVersion": "test.io/v1", "kind": "Thing",
                         "metadata": {"name": name}, "spec": {"size": size}});
        things.store.create(&scope("v1"), obj).await.unwrap();
    }
    let opts = strategy_host_storage::ListOptions::default();
    let list = things.store.list(&scope("v2"), opts.clone()).await.unwrap();
    let items: Vec<Value> = list.items.iter().map(|o| o.to_value()).collect();
    assert_eq!(items.len(), 2);
    for (item, (name, count)) in items.iter().zip([("a", 1), ("b", 2)]) {
        assert_eq!(item["apiVersion"], "test.io/v2");
        assert_eq!(
            item["metadata"]["name"], name,
            "the name is restored: {item}"
        );
        assert_eq!(item["metadata"]["labels"], json!({"converted": "yes"}));
        assert_eq!(item["spec"]["count"], count);
    }
    let obj = json!({"apiVersion": "test.io/v1", "kind": "Thing",
                     "metadata": {"name": "c"}, "spec": {"size": 9}});
    things.store.create(&scope("v1"), obj).await.unwrap();
    let err = things
        .store
        .list(&scope("v2"), opts.clone())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "conversion module for test.io/v1, Kind=Thing returned \
         invalid converted object at index 2: invalid apiVersion \"test.io/v9\", expected \"test.io/v2\""
    );
    let obj = json!({"apiVersion": "test.io/v1", "kind": "Thing",
                     "metadata": {"name": "bb"}, "spec": {"size": 8}});
    things.store.create(&scope("v1"), obj).await.unwrap();
    let opts = strategy_host_storage::ListOptions::default();
    let err = things.store.list(&scope("v2"), opts).await.unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(
            "conversion module for test.io/v1, Kind=Thing returned invalid converted object at index 2: not a JSON object: EOF"
        ),
        "{message}"
    );
}
