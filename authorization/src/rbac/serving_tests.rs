//! RBAC served on a registry over the embedded store: the bootstrap policy, aggregation written
//! back, the index following writes, and escalation refused as Kubernetes refuses it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::{ensure_bootstrap_policy, start, RbacAuthorizer};
use crate::registry::{Error, Registry, RequestScope, ServedResource, UpdateFn};
use crate::storage::embedded::{EmbeddedConfig, EmbeddedStore};
use crate::storage::Storage;
use crate::strategy::DefaultResolver;
use crate::user::UserInfo;
use crate::Attributes;

const GROUP: &str = "rbac.authorization.k8s.io";

async fn serve(dir: &std::path::Path) -> (Arc<Registry>, Arc<RbacAuthorizer>) {
    let store: Arc<dyn Storage> = Arc::new(
        EmbeddedStore::open(EmbeddedConfig::new(dir.join("db")))
            .await
            .unwrap(),
    );
    let registry = Registry::new(store, Arc::new(DefaultResolver));
    registry.start();
    let rbac = start(&registry, None);
    assert!(rbac.wait_synced(Duration::from_secs(5)).await);
    ensure_bootstrap_policy(&registry).await;
    let ns = registry.resolve("", "v1", "namespaces").unwrap();
    ns.store
        .create(
            &as_user(None, UserInfo::server()),
            json!({"metadata": {"name": "team"}}),
        )
        .await
        .unwrap();
    (registry, rbac)
}

fn as_user(namespace: Option<&str>, user: UserInfo) -> RequestScope {
    RequestScope {
        version: "v1".into(),
        namespace: namespace.map(String::from),
        request_id: "test".into(),
        user: Arc::new(user),
        ..RequestScope::default()
    }
}

fn bob() -> UserInfo {
    UserInfo {
        username: "bob".into(),
        groups: vec!["system:authenticated".into()],
        ..UserInfo::default()
    }
}

fn kind(registry: &Registry, plural: &str) -> ServedResource {
    registry.resolve(GROUP, "v1", plural).expect("served")
}

/// Polls `check` for up to five seconds.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..100 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen");
}

fn allows(
    rbac: &RbacAuthorizer,
    user: &UserInfo,
    verb: &str,
    group: &str,
    resource: &str,
    ns: &str,
) -> bool {
    rbac.decide(&Attributes {
        user: user.clone(),
        verb: verb.into(),
        resource_request: true,
        api_group: group.into(),
        resource: resource.into(),
        namespace: ns.into(),
        ..Attributes::default()
    })
    .allowed()
}

fn rule(verbs: &[&str], group: &str, resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": [group], "resources": resources})
}

#[tokio::test]
async fn bootstrap_roles_aggregate_and_masters_hold_everything() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, rbac) = serve(dir.path()).await;
    let roles = kind(&registry, "clusterroles");
    let server = as_user(None, UserInfo::server());
    eventually("admin aggregating edit and view", async || {
        let admin = roles
            .store
            .get(&server, "admin", Default::default())
            .await
            .unwrap();
        let text = admin["rules"].to_string();
        text.contains("rolebindings")
            && text.contains("serviceaccounts/token")
            && text.contains("namespaces")
    })
    .await;
    let view = roles
        .store
        .get(&server, "view", Default::default())
        .await
        .unwrap();
    assert!(
        !view["rules"].to_string().contains("secrets"),
        "{}",
        view["rules"]
    );
    // system:masters holds everything through the cluster-admin binding.
    assert!(allows(
        &rbac,
        &UserInfo::server(),
        "delete",
        "",
        "namespaces",
        ""
    ));
    assert!(allows(
        &rbac,
        &bob(),
        "create",
        "authorization.k8s.io",
        "selfsubjectaccessreviews",
        ""
    ));
    assert!(!allows(&rbac, &bob(), "list", "", "secrets", "team"));
    // A second start changes nothing; a reduced role gets its rules back.
    ensure_bootstrap_policy(&registry).await;
    let update: UpdateFn = Arc::new(|current: Option<&Value>| {
        let mut role = current.cloned().unwrap();
        role["rules"] = json!([]);
        Ok(role)
    });
    roles
        .store
        .update(&server, "system:basic-user", update)
        .await
        .unwrap();
    ensure_bootstrap_policy(&registry).await;
    let basic = roles
        .store
        .get(&server, "system:basic-user", Default::default())
        .await
        .unwrap();
    assert!(basic["rules"]
        .to_string()
        .contains("selfsubjectrulesreviews"));
}

#[tokio::test]
async fn escalation_is_refused_unless_held_escalate_or_bind() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, rbac) = serve(dir.path()).await;
    let (roles, bindings) = (kind(&registry, "roles"), kind(&registry, "rolebindings"));
    let server = as_user(Some("team"), UserInfo::server());
    let bobs = as_user(Some("team"), bob());
    // Bob may read configmaps in team.
    roles
        .store
        .create(&server, json!({"metadata": {"name": "cm-reader"}, "rules": [rule(&["get"], "", &["configmaps"])]}))
        .await
        .unwrap();
    bindings
        .store
        .create(
            &server,
            json!({"metadata": {"name": "bob-cm"}, "roleRef": {"kind": "Role", "name": "cm-reader"},
                                "subjects": [{"kind": "User", "name": "bob"}]}),
        )
        .await
        .unwrap();
    eventually("bob's binding indexed", async || {
        allows(&rbac, &bob(), "get", "", "configmaps", "team")
    })
    .await;

    // What bob holds he may grant; more he may not.
    roles
        .store
        .create(
            &bobs,
            json!({"metadata": {"name": "mine"}, "rules": [rule(&["get"], "", &["configmaps"])]}),
        )
        .await
        .unwrap();
    let err = roles
        .store
        .create(&bobs, json!({"metadata": {"name": "more"}, "rules": [rule(&["get"], "", &["secrets", "configmaps"])]}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "roles.rbac.authorization.k8s.io \"more\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
    );
    let err = bindings
        .store
        .create(&bobs, json!({"metadata": {"name": "bob-view"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
                              "subjects": [{"kind": "User", "name": "eve"}]}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden { .. }), "{err}");
    let err = bindings
        .store
        .create(&bobs, json!({"metadata": {"name": "ghost"}, "roleRef": {"kind": "ClusterRole", "name": "nope"},
                              "subjects": [{"kind": "User", "name": "eve"}]}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "clusterroles.rbac.authorization.k8s.io \"nope\" not found"
    );

    // `bind` on view (by name) and `escalate` on roles lift the checks.
    roles
        .store
        .create(&server, json!({"metadata": {"name": "delegate"}, "rules": [
            {"verbs": ["bind"], "apiGroups": [GROUP], "resources": ["clusterroles"], "resourceNames": ["view"]},
            {"verbs": ["escalate"], "apiGroups": [GROUP], "resources": ["roles"]}]}))
        .await
        .unwrap();
    bindings
        .store
        .create(&server, json!({"metadata": {"name": "bob-delegate"}, "roleRef": {"kind": "Role", "name": "delegate"},
                                "subjects": [{"kind": "User", "name": "bob"}]}))
        .await
        .unwrap();
    eventually("bob's delegation indexed", async || {
        allows(&rbac, &bob(), "escalate", GROUP, "roles", "team")
    })
    .await;
    bindings
        .store
        .create(&bobs, json!({"metadata": {"name": "bob-view"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
                              "subjects": [{"kind": "User", "name": "eve"}]}))
        .await
        .unwrap();
    roles
        .store
        .create(
            &bobs,
            json!({"metadata": {"name": "more"}, "rules": [rule(&["get"], "", &["secrets"])]}),
        )
        .await
        .unwrap();

    // A binding's roleRef never changes.
    let update: UpdateFn = Arc::new(|current: Option<&Value>| {
        let mut b = current.cloned().unwrap();
        b["roleRef"]["name"] = json!("edit");
        Ok(b)
    });
    let err = bindings
        .store
        .update(&server, "bob-view", update)
        .await
        .unwrap_err();
    let Error::Invalid { causes, .. } = err else {
        panic!("{err}")
    };
    assert!(
        causes[0].detail.ends_with("cannot change roleRef"),
        "{causes:?}"
    );
}

#[tokio::test]
async fn cluster_roles_need_cluster_rights_and_aggregation_needs_cluster_admin() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, _) = serve(dir.path()).await;
    let cluster_roles = kind(&registry, "clusterroles");
    let bobs = as_user(None, bob());
    // Bob holds the discovery URLs cluster-wide, so he may grant them, but not an aggregation.
    cluster_roles
        .store
        .create(&bobs, json!({"metadata": {"name": "urls"}, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/version"]}]}))
        .await
        .unwrap();
    let err = cluster_roles
        .store
        .create(&bobs, json!({"metadata": {"name": "gather"},
                              "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "clusterroles.rbac.authorization.k8s.io \"gather\" is forbidden: must have cluster-admin privileges to use the aggregationRule"
    );
    // Names may carry colons, as the bootstrap roles' do.
    let server = as_user(None, UserInfo::server());
    cluster_roles
        .store
        .create(
            &server,
            json!({"metadata": {"name": "team:reader"}, "rules": []}),
        )
        .await
        .unwrap();
}
