//! RBAC served on a registry over the embedded store: the bootstrap policy, aggregation written
//! back, the index following writes, and escalation refused as Kubernetes refuses it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::{ensure_bootstrap_policy, start, Kinds, RbacAuthorizer};
use crate::strategy::DefaultResolver;
use crate::user::UserInfo;
use crate::Attributes;
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::{Error, Registry};

const GROUP: &str = "rbac.authorization.k8s.io";

async fn serve(dir: &std::path::Path) -> (Arc<Registry>, Arc<RbacAuthorizer>) {
    let registry = Registry::open_embedded(&dir.join("db"), Arc::new(DefaultResolver))
        .await
        .unwrap();
    registry.start();
    let rbac = Arc::new(RbacAuthorizer::default());
    registry.serve_kinds(&[&Kinds::new(&rbac, None)]);
    start(&registry, &rbac);
    assert!(rbac.wait_synced(Duration::from_secs(5)).await);
    ensure_bootstrap_policy(&registry).await;
    let namespaces = Kind {
        group: "",
        plural: "namespaces",
    };
    let server = as_user(&registry, None, UserInfo::server());
    create(&namespaces, &server, json!({"metadata": {"name": "team"}})).await;
    (registry, rbac)
}

/// A user's requests in a namespace (none: cluster-wide).
struct Caller {
    client: Client,
    namespace: Option<&'static str>,
}

fn as_user(registry: &Arc<Registry>, namespace: Option<&'static str>, user: UserInfo) -> Caller {
    Caller {
        client: Client::new(registry, "test").as_user(Arc::new(user)),
        namespace,
    }
}

fn bob() -> UserInfo {
    UserInfo {
        username: "bob".into(),
        groups: vec!["system:authenticated".into()],
        ..UserInfo::default()
    }
}

/// A served resource.
struct Kind {
    group: &'static str,
    plural: &'static str,
}

fn kind(registry: &Registry, plural: &'static str) -> Kind {
    registry.resolve(GROUP, "v1", plural).expect("served");
    Kind {
        group: GROUP,
        plural,
    }
}

/// The object `name` of `kind` where `caller` speaks.
fn object(kind: &Kind, caller: &Caller, name: &str) -> ObjectRef {
    ObjectRef::new(kind.group, "v1", kind.plural, caller.namespace, name)
}

/// Creates `obj` of `kind` as `caller`.
async fn create(kind: &Kind, caller: &Caller, obj: Value) {
    refusal(kind, caller, obj).await.unwrap();
}

/// The error creating `obj` of `kind` as `caller` is refused with.
async fn refused(kind: &Kind, caller: &Caller, obj: Value) -> Error {
    refusal(kind, caller, obj).await.unwrap_err()
}

async fn refusal(kind: &Kind, caller: &Caller, obj: Value) -> Result<Value, Error> {
    let (group, plural) = (kind.group, kind.plural);
    caller
        .client
        .create(group, "v1", plural, caller.namespace, obj)
        .await
}

/// Reads the object `name` of `kind` as `caller`.
async fn get(kind: &Kind, caller: &Caller, name: &str) -> Value {
    let name = object(kind, caller, name);
    caller.client.get(&name).await.unwrap().expect("exists")
}

/// Changes the object `name` of `kind` with `edit`, as `caller`.
async fn update(
    kind: &Kind,
    caller: &Caller,
    name: &str,
    edit: impl Fn(&mut Value) -> bool + Send + Sync + 'static,
) -> Result<(), Error> {
    let uid = get(kind, caller, name).await["metadata"]["uid"].clone();
    let name = object(kind, caller, name);
    let uid = uid.as_str().unwrap_or_default();
    caller.client.update(&name, uid, None, edit).await
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

/// A Role or ClusterRole `name` holding `rules`.
fn role(name: &str, rules: Value) -> Value {
    json!({"metadata": {"name": name}, "rules": rules})
}

/// A RoleBinding `name` granting the `role_kind` `role` to the user `user`.
fn binding(name: &str, role_kind: &str, role: &str, user: &str) -> Value {
    json!({"metadata": {"name": name}, "roleRef": {"kind": role_kind, "name": role},
           "subjects": [{"kind": "User", "name": user}]})
}

#[tokio::test]
async fn bootstrap_roles_aggregate_and_masters_hold_everything() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, rbac) = serve(dir.path()).await;
    let roles = kind(&registry, "clusterroles");
    let server = as_user(&registry, None, UserInfo::server());
    eventually("admin aggregating edit and view", async || {
        let admin = get(&roles, &server, "admin").await;
        let text = admin["rules"].to_string();
        text.contains("rolebindings")
            && text.contains("serviceaccounts/token")
            && text.contains("namespaces")
    })
    .await;
    let view = get(&roles, &server, "view").await;
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
    update(&roles, &server, "system:basic-user", |role| {
        role["rules"] = json!([]);
        true
    })
    .await
    .unwrap();
    ensure_bootstrap_policy(&registry).await;
    let basic = get(&roles, &server, "system:basic-user").await;
    assert!(basic["rules"]
        .to_string()
        .contains("selfsubjectrulesreviews"));
}

#[tokio::test]
async fn escalation_is_refused_unless_held_escalate_or_bind() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, rbac) = serve(dir.path()).await;
    let (roles, bindings) = (kind(&registry, "roles"), kind(&registry, "rolebindings"));
    let server = as_user(&registry, Some("team"), UserInfo::server());
    let bobs = as_user(&registry, Some("team"), bob());
    // Bob may read configmaps in team.
    let cm_reader = role("cm-reader", json!([rule(&["get"], "", &["configmaps"])]));
    create(&roles, &server, cm_reader).await;
    let bob_cm = binding("bob-cm", "Role", "cm-reader", "bob");
    create(&bindings, &server, bob_cm).await;
    eventually("bob's binding indexed", async || {
        allows(&rbac, &bob(), "get", "", "configmaps", "team")
    })
    .await;

    // What bob holds he may grant; more he may not.
    let mine = role("mine", json!([rule(&["get"], "", &["configmaps"])]));
    create(&roles, &bobs, mine).await;
    let more = role(
        "more",
        json!([rule(&["get"], "", &["secrets", "configmaps"])]),
    );
    let err = refused(&roles, &bobs, more).await;
    assert!(matches!(err, Error::Forbidden { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "roles.rbac.authorization.k8s.io \"more\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
    );
    let bob_view = binding("bob-view", "ClusterRole", "view", "eve");
    let err = refused(&bindings, &bobs, bob_view.clone()).await;
    assert!(matches!(err, Error::Forbidden { .. }), "{err}");
    let ghost = binding("ghost", "ClusterRole", "nope", "eve");
    let err = refused(&bindings, &bobs, ghost).await;
    assert_eq!(
        err.to_string(),
        "clusterroles.rbac.authorization.k8s.io \"nope\" not found"
    );

    // `bind` on view (by name) and `escalate` on roles lift the checks.
    let delegate = role(
        "delegate",
        json!([
            {"verbs": ["bind"], "apiGroups": [GROUP], "resources": ["clusterroles"], "resourceNames": ["view"]},
            {"verbs": ["escalate"], "apiGroups": [GROUP], "resources": ["roles"]}]),
    );
    create(&roles, &server, delegate).await;
    let bob_delegate = binding("bob-delegate", "Role", "delegate", "bob");
    create(&bindings, &server, bob_delegate).await;
    eventually("bob's delegation indexed", async || {
        allows(&rbac, &bob(), "escalate", GROUP, "roles", "team")
    })
    .await;
    create(&bindings, &bobs, bob_view).await;
    let more = role("more", json!([rule(&["get"], "", &["secrets"])]));
    create(&roles, &bobs, more).await;

    // A binding's roleRef never changes.
    let err = update(&bindings, &server, "bob-view", |b| {
        b["roleRef"]["name"] = json!("edit");
        true
    })
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
    let bobs = as_user(&registry, None, bob());
    // Bob holds the discovery URLs cluster-wide, so he may grant them, but not an aggregation.
    let urls = role(
        "urls",
        json!([{"verbs": ["get"], "nonResourceURLs": ["/version"]}]),
    );
    create(&cluster_roles, &bobs, urls).await;
    let gather = json!({"metadata": {"name": "gather"},
                        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}});
    let err = refused(&cluster_roles, &bobs, gather).await;
    assert_eq!(
        err.to_string(),
        "clusterroles.rbac.authorization.k8s.io \"gather\" is forbidden: must have cluster-admin privileges to use the aggregationRule"
    );
    // Names may carry colons, as the bootstrap roles' do.
    let server = as_user(&registry, None, UserInfo::server());
    create(&cluster_roles, &server, role("team:reader", json!([]))).await;
}
