//! A delete decides on the state it changes: a finalizer or a strategy veto that lands between
//! the delete's first read and its write is honoured, because every retry asks again.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{DeleteOptions, Error, RegistryStore, RequestScope, ResourceDefinition};
use crate::strategy::{Admission, Answer, Refusal, Strategy, StrategyContext};
use strategy_host_storage::embedded::{EmbeddedConfig, EmbeddedStore};
use strategy_host_storage::{
    ConditionalDelete, GetOptions, GuaranteedUpdate, ListOptions, ObjectList, Preconditions,
    Result, Storage, TryUpdate, WatchStream,
};

/// A change another client makes to an object.
type Change = Box<dyn Fn(&mut Value) + Send + Sync>;

/// A store that lets another client's write land just before the first delete or update it is
/// asked for: the write a delete races with.
struct RacingStore {
    inner: Arc<dyn Storage>,
    race: Mutex<Option<Change>>,
}

impl RacingStore {
    /// Lands the racing write on `key`, once.
    async fn race(&self, key: &str) {
        let Some(change) = self.race.lock().unwrap().take() else {
            return;
        };
        let update: TryUpdate<'_> = Box::new(move |current| {
            let mut obj = current.expect("the object exists");
            change(&mut obj);
            Box::pin(async move { Ok(obj) })
        });
        self.inner
            .guaranteed_update(key, GuaranteedUpdate::new(update))
            .await
            .expect("the racing write lands");
    }
}

#[async_trait]
impl Storage for RacingStore {
    async fn create(&self, key: &str, obj: Value) -> Result<Value> {
        self.inner.create(key, obj).await
    }
    async fn delete(&self, key: &str, request: ConditionalDelete<'_>) -> Result<Value> {
        self.race(key).await;
        self.inner.delete(key, request).await
    }
    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchStream> {
        self.inner.watch(key, opts).await
    }
    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Value>> {
        self.inner.get(key, opts).await
    }
    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ObjectList> {
        self.inner.get_list(key, opts).await
    }
    async fn guaranteed_update(&self, key: &str, request: GuaranteedUpdate<'_>) -> Result<Value> {
        self.race(key).await;
        self.inner.guaranteed_update(key, request).await
    }
    async fn count(&self, key: &str) -> Result<u64> {
        self.inner.count(key).await
    }
    async fn current_revision(&self) -> Result<u64> {
        self.inner.current_revision().await
    }
}

/// Refuses to delete an object labelled `protected: "true"`.
struct ProtectingStrategy;

#[async_trait]
impl Strategy for ProtectingStrategy {
    fn name(&self) -> &str {
        "protecting"
    }
    async fn before_delete(&self, _: &StrategyContext, obj: &Value) -> Answer {
        let protected = obj.pointer("/metadata/labels/protected") == Some(&json!("true"));
        Ok(Admission {
            refusal: protected.then(|| Refusal::Forbidden("the object is protected".into())),
            ..Admission::default()
        })
    }
}

/// A store of `things.test.io` holding `thing` (with `metadata`), whose first delete or update
/// races with `change`; and the embedded store below it.
async fn racing_things(
    dir: &std::path::Path,
    thing: Value,
    change: Change,
) -> (RegistryStore, Arc<dyn Storage>) {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.test.io"},
        "spec": {"group": "test.io", "scope": "Cluster", "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "storage": true}]}});
    let def = Arc::new(ResourceDefinition::from_crd(&crd).expect("a valid definition"));
    let inner: Arc<dyn Storage> =
        Arc::new(EmbeddedStore::open(EmbeddedConfig::new(dir)).await.unwrap());
    let calm = RegistryStore::new(
        def.clone(),
        inner.clone(),
        Arc::new(ProtectingStrategy),
        None,
    );
    let mut obj = json!({"apiVersion": "test.io/v1", "kind": "Thing"});
    obj["metadata"] = thing;
    calm.create(&scope(), obj).await.expect("created");
    let racing = Arc::new(RacingStore {
        inner: inner.clone(),
        race: Mutex::new(Some(change)),
    });
    let store = RegistryStore::new(def, racing, Arc::new(ProtectingStrategy), None);
    (store, inner)
}

fn scope() -> RequestScope {
    RequestScope {
        version: "v1".into(),
        ..Default::default()
    }
}

async fn stored(inner: &Arc<dyn Storage>) -> Option<Value> {
    let opts = GetOptions::ignoring_not_found();
    inner.get("/test.io/things/a", opts).await.unwrap()
}

#[tokio::test]
async fn a_finalizer_added_while_a_delete_is_in_flight_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let add_finalizer: Change =
        Box::new(|obj| obj["metadata"]["finalizers"] = json!(["example.com/keep"]));
    let (things, inner) = racing_things(dir.path(), json!({"name": "a"}), add_finalizer).await;

    let out = things
        .delete(&scope(), "a", &DeleteOptions::default())
        .await
        .expect("the delete is accepted");

    let kept = stored(&inner)
        .await
        .expect("the finalizer keeps the object");
    assert_eq!(kept["metadata"]["finalizers"], json!(["example.com/keep"]));
    assert!(
        kept["metadata"]["deletionTimestamp"].is_string(),
        "marked deleting: {kept}"
    );
    assert_eq!(
        out.object["metadata"]["deletionTimestamp"],
        kept["metadata"]["deletionTimestamp"]
    );
}

#[tokio::test]
async fn a_finalizer_removed_while_a_delete_marks_the_object_lets_it_go() {
    let dir = tempfile::tempdir().unwrap();
    let thing = json!({"name": "a", "finalizers": ["example.com/keep"]});
    let remove_finalizer: Change = Box::new(|obj| {
        obj["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("finalizers");
    });
    let (things, inner) = racing_things(dir.path(), thing, remove_finalizer).await;

    things
        .delete(&scope(), "a", &DeleteOptions::default())
        .await
        .expect("the delete is accepted");

    assert_eq!(
        stored(&inner).await,
        None,
        "nothing keeps the object any more"
    );
}

#[tokio::test]
async fn a_strategy_veto_that_appears_while_a_delete_is_in_flight_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let protect: Change = Box::new(|obj| obj["metadata"]["labels"] = json!({"protected": "true"}));
    let (things, inner) = racing_things(dir.path(), json!({"name": "a"}), protect).await;

    let refused = things
        .delete(&scope(), "a", &DeleteOptions::default())
        .await
        .expect_err("the strategy refuses the object as it now is");

    assert!(matches!(refused, Error::Forbidden { .. }), "{refused:?}");
    assert!(stored(&inner).await.is_some(), "the object stays");
}

#[tokio::test]
async fn a_delete_with_a_stale_resource_version_precondition_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let relabel: Change = Box::new(|obj| obj["metadata"]["labels"] = json!({"tier": "b"}));
    let (things, inner) = racing_things(dir.path(), json!({"name": "a"}), relabel).await;
    let read = stored(&inner).await.unwrap();
    let opts = DeleteOptions {
        preconditions: Preconditions {
            uid: None,
            resource_version: read["metadata"]["resourceVersion"]
                .as_str()
                .map(String::from),
        },
        ..Default::default()
    };

    let refused = things
        .delete(&scope(), "a", &opts)
        .await
        .expect_err("the object changed since the client read it");

    assert!(matches!(refused, Error::Conflict { .. }), "{refused:?}");
    assert!(stored(&inner).await.is_some(), "the object stays");
}
