//! kube-rs (the Rust client and its runtime `watcher`) against the real binary: typed create,
//! get, list, merge patch and delete of ConfigMaps, a watcher that sees the object created,
//! changed and deleted, a 404 as `kube::Error::Api` after the delete, and an owned child going
//! with a foreground delete of its owner.

use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use strategy_host_e2e::HostProcess;

/// What the watcher has seen of the object `rs`, in order: its `a` value, or "deleted".
async fn next_sight(
    events: &mut (impl futures::Stream<Item = Result<Event<ConfigMap>, watcher::Error>> + Unpin),
) -> String {
    let wait = async {
        loop {
            let event = events.try_next().await.unwrap().expect("the watch goes on");
            let named = |cm: &ConfigMap| cm.metadata.name.as_deref() == Some("rs");
            match event {
                Event::Apply(cm) | Event::InitApply(cm) if named(&cm) => {
                    break cm.data.unwrap_or_default()["a"].clone()
                }
                Event::Delete(cm) if named(&cm) => break "deleted".to_string(),
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the watcher sees the change within 10 s")
}

#[tokio::test]
async fn kube_rs_creates_gets_lists_patches_deletes_and_watches() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", &data]).unwrap();
    let config = kube::Config::new(host.base_url.parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut events = watcher::watcher(configmaps.clone(), watcher::Config::default()).boxed();

    let created = configmaps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("rs".into()),
                    ..ObjectMeta::default()
                },
                data: Some([("a".to_string(), "1".to_string())].into()),
                ..ConfigMap::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(next_sight(&mut events).await, "1");
    let got = configmaps.get("rs").await.unwrap();
    assert_eq!(got.data, created.data);
    assert_eq!(
        got.metadata.resource_version,
        created.metadata.resource_version
    );
    let listed = configmaps.list(&ListParams::default()).await.unwrap();
    assert!(listed
        .items
        .iter()
        .any(|cm| cm.metadata.name.as_deref() == Some("rs")));

    let patch = Patch::Merge(json!({"data": {"a": "2"}}));
    configmaps
        .patch("rs", &PatchParams::default(), &patch)
        .await
        .unwrap();
    assert_eq!(next_sight(&mut events).await, "2");
    configmaps
        .delete("rs", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(next_sight(&mut events).await, "deleted");
    match configmaps.get("rs").await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404, "{status:?}"),
        other => panic!("a get after the delete answered {other:?}"),
    }
}

/// An owner and its child as a kube-rs controller makes them (`Resource::controller_owner_ref`):
/// a foreground delete of the owner through kube-rs takes the child with it, and kube-rs's
/// `await_condition(is_deleted)` sees both go.
#[tokio::test]
async fn kube_rs_owned_children_go_with_a_foreground_delete() {
    use kube::runtime::wait::{await_condition, conditions};
    use kube::Resource as _;

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", &data]).unwrap();
    let client = kube::Client::try_from(kube::Config::new(host.base_url.parse().unwrap())).unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
    let named = |name: &str| ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let owner = configmaps
        .create(&PostParams::default(), &named("rs-owner"))
        .await
        .unwrap();
    let mut child = named("rs-child");
    child.metadata.owner_references = Some(vec![owner.controller_owner_ref(&()).unwrap()]);
    let child = configmaps
        .create(&PostParams::default(), &child)
        .await
        .unwrap();
    let deleting = configmaps
        .delete("rs-owner", &DeleteParams::foreground())
        .await
        .unwrap();
    assert!(
        deleting.is_left(),
        "a foreground delete answers the owner, still there"
    );
    let gone = |name: &'static str, uid: Option<String>| {
        let api = configmaps.clone();
        async move {
            let uid = uid.unwrap();
            let wait = await_condition(api, name, conditions::is_deleted(&uid));
            tokio::time::timeout(Duration::from_secs(20), wait).await
        }
    };
    gone("rs-child", child.metadata.uid).await.unwrap().unwrap();
    gone("rs-owner", owner.metadata.uid).await.unwrap().unwrap();
}
