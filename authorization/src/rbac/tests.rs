//! The RBAC authorizer and reviews over a fixture set of roles and bindings.

use serde_json::{json, Value};

use super::{RbacAuthorizer, RbacKind};
use crate::user::UserInfo;
use crate::RuleResolver;
use crate::{review, with_privileged_groups, Attributes, Authorizer, Decision};

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        username: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..UserInfo::default()
    }
}

fn role(kind: &str, ns: Option<&str>, name: &str, rules: Value) -> Value {
    let mut meta = json!({"name": name});
    if let Some(ns) = ns {
        meta["namespace"] = json!(ns);
    }
    json!({"kind": kind, "metadata": meta, "rules": rules})
}

fn binding(
    kind: &str,
    ns: Option<&str>,
    name: &str,
    role_ref: (&str, &str),
    subjects: Value,
) -> Value {
    let mut meta = json!({"name": name});
    if let Some(ns) = ns {
        meta["namespace"] = json!(ns);
    }
    json!({"kind": kind, "metadata": meta,
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_ref.0, "name": role_ref.1},
           "subjects": subjects})
}

fn fixture() -> RbacAuthorizer {
    RbacAuthorizer::from_objects(&[
        (
            RbacKind::ClusterRole,
            role(
                "ClusterRole",
                None,
                "reader",
                json!([{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["configmaps"]}]),
            ),
        ),
        (
            RbacKind::ClusterRole,
            role(
                "ClusterRole",
                None,
                "health",
                json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}]),
            ),
        ),
        (
            RbacKind::Role,
            role(
                "Role",
                Some("team"),
                "secret-db",
                json!([
                    {"verbs": ["get", "update"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["db"]},
                    {"verbs": ["create"], "apiGroups": [""], "resources": ["serviceaccounts/token"]}
                ]),
            ),
        ),
        (
            RbacKind::ClusterRoleBinding,
            binding(
                "ClusterRoleBinding",
                None,
                "everyone-health",
                ("ClusterRole", "health"),
                json!([{"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"}]),
            ),
        ),
        (
            RbacKind::RoleBinding,
            binding(
                "RoleBinding",
                Some("team"),
                "readers",
                ("ClusterRole", "reader"),
                json!([{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
                           {"kind": "ServiceAccount", "name": "bot"}]),
            ),
        ),
        (
            RbacKind::RoleBinding,
            binding(
                "RoleBinding",
                Some("team"),
                "db",
                ("Role", "secret-db"),
                json!([{"kind": "Group", "name": "dba", "apiGroup": "rbac.authorization.k8s.io"}]),
            ),
        ),
        (
            RbacKind::RoleBinding,
            binding(
                "RoleBinding",
                Some("team"),
                "dangling",
                ("ClusterRole", "missing"),
                json!([{"kind": "User", "name": "carol", "apiGroup": "rbac.authorization.k8s.io"}]),
            ),
        ),
    ])
}

fn ask(
    a: &RbacAuthorizer,
    who: &UserInfo,
    verb: &str,
    resource: &str,
    sub: &str,
    ns: &str,
    name: &str,
) -> Decision {
    a.decide(&Attributes {
        user: who.clone(),
        verb: verb.into(),
        resource_request: true,
        api_group: String::new(),
        api_version: "v1".into(),
        resource: resource.into(),
        subresource: sub.into(),
        namespace: ns.into(),
        name: name.into(),
        path: String::new(),
    })
}

#[test]
fn a_role_binding_to_a_cluster_role_grants_it_in_its_namespace_only() {
    let a = fixture();
    let alice = user("alice", &["system:authenticated"]);
    let d = ask(&a, &alice, "get", "configmaps", "", "team", "c");
    assert_eq!(
        d,
        Decision::Allow(
            "RBAC: allowed by RoleBinding \"readers/team\" of ClusterRole \"reader\" to User \"alice\"".into()
        )
    );
    assert!(ask(&a, &alice, "list", "configmaps", "", "team", "").allowed());
    assert!(!ask(&a, &alice, "get", "configmaps", "", "other", "c").allowed());
    assert!(!ask(&a, &alice, "list", "configmaps", "", "", "").allowed());
    assert!(!ask(&a, &alice, "delete", "configmaps", "", "team", "c").allowed());
}

#[test]
fn service_accounts_groups_names_and_subresources() {
    let a = fixture();
    let bot = user(
        "system:serviceaccount:team:bot",
        &["system:serviceaccounts"],
    );
    assert_eq!(
        ask(&a, &bot, "watch", "configmaps", "", "team", "").reason(),
        "RBAC: allowed by RoleBinding \"readers/team\" of ClusterRole \"reader\" to ServiceAccount \"bot/team\""
    );
    let other_bot = user("system:serviceaccount:other:bot", &[]);
    assert!(!ask(&a, &other_bot, "get", "configmaps", "", "team", "c").allowed());
    let dba = user("dan", &["dba"]);
    assert!(ask(&a, &dba, "get", "secrets", "", "team", "db").allowed());
    assert!(!ask(&a, &dba, "get", "secrets", "", "team", "web").allowed());
    assert!(!ask(&a, &dba, "list", "secrets", "", "team", "").allowed());
    assert!(ask(
        &a,
        &dba,
        "create",
        "serviceaccounts",
        "token",
        "team",
        "bot"
    )
    .allowed());
    assert!(!ask(&a, &dba, "create", "serviceaccounts", "", "team", "").allowed());
}

#[test]
fn non_resource_urls_and_missing_roles() {
    let a = fixture();
    let anyone = user("zed", &["system:authenticated"]);
    let url = |path: &str| Attributes {
        user: anyone.clone(),
        verb: "get".into(),
        path: path.into(),
        ..Attributes::default()
    };
    assert!(a.decide(&url("/healthz")).allowed());
    assert!(a.decide(&url("/apis/apps")).allowed());
    assert!(!a.decide(&url("/metrics")).allowed());
    assert_eq!(
        a.decide(&url("/healthz")).reason(),
        "RBAC: allowed by ClusterRoleBinding \"everyone-health\" of ClusterRole \"health\" to Group \"system:authenticated\""
    );
    let carol = user("carol", &[]);
    assert_eq!(
        ask(&a, &carol, "get", "configmaps", "", "team", "c"),
        Decision::NoOpinion(
            "RBAC: clusterrole.rbac.authorization.k8s.io \"missing\" not found".into()
        )
    );
    assert_eq!(
        ask(
            &a,
            &user("nobody", &[]),
            "get",
            "configmaps",
            "",
            "team",
            "c"
        ),
        Decision::NoOpinion(String::new())
    );
}

#[tokio::test]
async fn masters_pass_before_rbac() {
    let a = with_privileged_groups(std::sync::Arc::new(fixture()));
    let delete = |who: UserInfo| Attributes {
        user: who,
        verb: "delete".into(),
        resource_request: true,
        resource: "namespaces".into(),
        name: "x".into(),
        ..Attributes::default()
    };
    assert!(a.authorize(&delete(UserInfo::server())).await.allowed());
    assert!(!a.authorize(&delete(user("zed", &[]))).await.allowed());
}

#[test]
fn rules_for_lists_cluster_and_namespace_rules() {
    let a = fixture();
    let rules = a.rules_for(&user("dan", &["dba", "system:authenticated"]), "team");
    assert_eq!(rules.resource_rules.len(), 2);
    assert_eq!(rules.non_resource_rules.len(), 1);
    assert_eq!(rules.resource_rules[0].resource_names, ["db"]);
    assert!(!rules.incomplete);
    assert!(rules.evaluation_error.is_empty());
    let carol = a.rules_for(&user("carol", &[]), "team");
    assert_eq!(
        carol.evaluation_error,
        "clusterrole.rbac.authorization.k8s.io \"missing\" not found"
    );
}

#[tokio::test]
async fn access_reviews_answer_as_kube_apiserver() {
    let a = fixture();
    let sar = review::subject_access_review(
        &a,
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
               "spec": {"user": "alice", "resourceAttributes": {"namespace": "team", "verb": "get", "resource": "configmaps"}}}),
    )
    .await
    .unwrap();
    assert_eq!(sar["status"]["allowed"], true);
    assert!(sar["status"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("RBAC: allowed by"));
    assert!(sar["status"].get("denied").is_none());
    let denied = review::subject_access_review(
        &a,
        json!({"spec": {"groups": ["x"], "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}}),
    )
    .await
    .unwrap();
    assert_eq!(denied["status"], json!({"allowed": false}));
    assert_eq!(denied["kind"], "SubjectAccessReview");
    let err = review::subject_access_review(&a, json!({"spec": {}}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "SubjectAccessReview.authorization.k8s.io \"\" is invalid"
    );
    let strategy_host_registry::Error::Invalid { causes, .. } = err else {
        panic!("not invalid")
    };
    assert_eq!(causes.len(), 2);
    assert_eq!(causes[0].field, "spec.resourceAttributes");
    assert_eq!(causes[1].field, "spec.user");

    let alice = user("alice", &["system:authenticated"]);
    let ssar = review::self_subject_access_review(
        &a,
        &alice,
        json!({"metadata": {"creationTimestamp": null},
               "spec": {"resourceAttributes": {"namespace": "team", "verb": "list", "resource": "configmaps"}}}),
    )
    .await
    .unwrap();
    assert_eq!(ssar["status"]["allowed"], true);
    assert_eq!(ssar["apiVersion"], "authorization.k8s.io/v1");

    let local = |ns: &'static str, body: Value| review::local_subject_access_review(&a, ns, body);
    let ok = local(
        "team",
        json!({"spec": {"user": "alice", "resourceAttributes": {"namespace": "team", "verb": "get", "resource": "configmaps"}}}),
    )
    .await
    .unwrap();
    assert_eq!(ok["metadata"]["namespace"], "team");
    assert_eq!(ok["status"]["allowed"], true);
    let Err(strategy_host_registry::Error::Invalid { causes, .. }) = local(
        "team",
        json!({"spec": {"user": "alice", "resourceAttributes": {"namespace": "other", "verb": "get", "resource": "configmaps"}}}),
    )
    .await
    else {
        panic!("a different namespace is invalid")
    };
    assert_eq!(causes[0].field, "spec.resourceAttributes.namespace");
    assert_eq!(causes[0].detail, "\"other\": must match metadata.namespace");
    assert!(matches!(
        local(
            "team",
            json!({"metadata": {"namespace": "other"}, "spec": {}})
        )
        .await,
        Err(strategy_host_registry::Error::BadRequest(_))
    ));
}

#[test]
fn rules_reviews_list_rules_and_need_a_namespace() {
    let a = fixture();
    let dba = user("dan", &["dba"]);
    let review = review::self_subject_rules_review(
        &a,
        &dba,
        json!({"kind": "SelfSubjectRulesReview", "spec": {"namespace": "team"}}),
    )
    .unwrap();
    assert_eq!(review["status"]["incomplete"], false);
    assert_eq!(
        review["status"]["resourceRules"][0],
        json!({"verbs": ["get", "update"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["db"]})
    );
    assert_eq!(review["status"]["nonResourceRules"], json!([]));
    assert_eq!(review["spec"], json!({}));
    assert!(matches!(
        review::self_subject_rules_review(&a, &dba, json!({"spec": {}})),
        Err(strategy_host_registry::Error::BadRequest(m)) if m == "no namespace on request"
    ));
}
