//! The access-control kinds (RBAC, token requests and reviews, access reviews): what the codec
//! encodes is what k8s-pb's messages decode (an independent reader, as a Go client's generated
//! code), bytes as kubectl writes them decode to Kubernetes' JSON, and every kind is
//! protobuf-capable.

use std::collections::BTreeMap;

use k8s_pb::api::authentication::v1 as authentication;
use k8s_pb::api::authorization::v1 as authorization;
use k8s_pb::api::rbac::v1 as rbac;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use serde_json::json;

use super::{access_fixtures, decoded_from_go, named_in, read_as, supports};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn every_access_kind_is_protobuf_capable() {
    for obj in access_fixtures::all() {
        let (api_version, kind) = (
            obj["apiVersion"].as_str().unwrap(),
            obj["kind"].as_str().unwrap(),
        );
        assert!(supports(api_version, kind), "{api_version} {kind}");
    }
    // The review kinds are create-only in Kubernetes: no lists.
    assert!(!supports(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReviewList"
    ));
    assert!(!supports("rbac.authorization.k8s.io/v1beta1", "Role"));
}

#[test]
fn rbac_kinds_read_by_k8s_pb() {
    let role: rbac::ClusterRole = read_as(&access_fixtures::cluster_role("edit"));
    assert_eq!(role.metadata.unwrap().name.as_deref(), Some("edit"));
    let rule = &role.rules[0];
    assert_eq!(rule.verbs, strings(&["get", "list", "watch"]));
    assert_eq!(rule.api_groups, strings(&["", "apps"]));
    assert_eq!(rule.resource_names, strings(&["settings"]));
    assert_eq!(rule.non_resource_ur_ls, strings(&["/healthz", "/api/*"]));
    let selector = &role.aggregation_rule.unwrap().cluster_role_selectors[0];
    assert_eq!(
        selector.match_labels,
        BTreeMap::from([(
            "rbac.example.com/aggregate-to-edit".to_owned(),
            "true".to_owned()
        )])
    );
    let requirement = &selector.match_expressions[0];
    assert_eq!(
        (
            requirement.key.as_deref(),
            requirement.operator.as_deref(),
            requirement.values.clone()
        ),
        (Some("tier"), Some("In"), strings(&["a", "b"]))
    );

    let binding: rbac::RoleBinding = read_as(&access_fixtures::role_binding("devs"));
    assert_eq!(
        binding.role_ref,
        Some(rbac::RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: Some("Role".into()),
            name: Some("edit".into()),
        })
    );
    assert_eq!(binding.subjects.len(), 2);
    assert_eq!(binding.subjects[1].kind.as_deref(), Some("Group"));
    assert_eq!(binding.subjects[1].namespace.as_deref(), Some("x"));

    let list: rbac::ClusterRoleBindingList = read_as(&access_fixtures::all()[7]);
    assert_eq!(list.items.len(), 2);
    assert_eq!(
        list.metadata.unwrap().resource_version.as_deref(),
        Some("1234")
    );
}

#[test]
fn authentication_kinds_read_by_k8s_pb() {
    let request: authentication::TokenRequest = read_as(&access_fixtures::token_request());
    let spec = request.spec.unwrap();
    assert_eq!(spec.audiences, strings(&["https://kubernetes.default.svc"]));
    assert_eq!(spec.expiration_seconds, Some(0), "a pointer's zero is sent");
    assert_eq!(
        spec.bound_object_ref.unwrap().u_id.as_deref(),
        Some("0a1b2c3d-0000-4000-8000-000000000004")
    );
    let status = request.status.unwrap();
    assert_eq!(
        status.token.as_deref(),
        Some("eyJhbGciOiJSUzI1NiJ9.e30.c2ln")
    );
    assert_eq!(
        status.expiration_timestamp.unwrap().seconds,
        Some(1_704_164_645)
    );

    let review: authentication::SelfSubjectReview =
        read_as(&access_fixtures::self_subject_review());
    let user = review.status.unwrap().user_info.unwrap();
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:default:builder")
    );
    assert_eq!(
        user.groups,
        strings(&["system:serviceaccounts", "system:authenticated"])
    );
    assert_eq!(user.extra["scopes"].items, strings(&["a", "b"]));

    let review: authentication::TokenReview = read_as(&access_fixtures::token_review());
    let status = review.status.unwrap();
    assert_eq!(status.authenticated, Some(true));
    assert_eq!(
        status.user.unwrap().extra["authentication.kubernetes.io/pod-name"].items,
        ["builder-0"]
    );
}

#[test]
fn authorization_kinds_read_by_k8s_pb() {
    let review: authorization::SelfSubjectAccessReview =
        read_as(&access_fixtures::self_subject_access_review());
    let attributes = review.spec.unwrap().resource_attributes.unwrap();
    assert_eq!(
        (
            attributes.verb.as_deref(),
            attributes.resource.as_deref(),
            attributes.subresource.as_deref()
        ),
        (Some("list"), Some("deployments"), Some("scale"))
    );
    let labels = attributes.label_selector.unwrap();
    assert_eq!(labels.raw_selector.as_deref(), Some("app=web"));
    assert_eq!(labels.requirements[0].key.as_deref(), Some("app"));
    let fields = attributes.field_selector.unwrap();
    assert_eq!(fields.requirements[0].values, strings(&["node-1"]));
    let status = review.status.unwrap();
    assert_eq!((status.allowed, status.denied), (Some(false), Some(true)));

    let review: authorization::LocalSubjectAccessReview = read_as(
        &access_fixtures::subject_access_review("LocalSubjectAccessReview"),
    );
    let spec = review.spec.unwrap();
    assert_eq!(spec.user.as_deref(), Some("alice"));
    assert_eq!(spec.extra["scopes"].items, ["a"]);
    assert_eq!(
        spec.non_resource_attributes.unwrap().path.as_deref(),
        Some("/healthz")
    );

    let rules: authorization::SelfSubjectRulesReview =
        read_as(&access_fixtures::self_subject_rules_review());
    assert_eq!(rules.spec.unwrap().namespace.as_deref(), Some("default"));
    let status = rules.status.unwrap();
    assert_eq!(status.incomplete, Some(false));
    assert_eq!(status.resource_rules[0].resources, strings(&["configmaps"]));
    assert_eq!(
        status.non_resource_rules[0].non_resource_ur_ls,
        strings(&["/healthz"])
    );
}

/// `kubectl create rolebinding --role=edit --user=alice` as a Go client writes it: every
/// non-pointer string present, the core group as `""`.
#[test]
fn a_role_binding_from_kubectl_keeps_the_fields_go_always_writes() {
    let binding = rbac::RoleBinding {
        metadata: Some(named_in("", "devs")),
        subjects: vec![rbac::Subject {
            kind: Some("User".into()),
            api_group: Some("rbac.authorization.k8s.io".into()),
            name: Some("alice".into()),
            namespace: Some(String::new()),
        }],
        role_ref: Some(rbac::RoleRef {
            api_group: Some(String::new()),
            kind: Some("Role".into()),
            name: Some("edit".into()),
        }),
    };
    assert_eq!(
        decoded_from_go("rbac.authorization.k8s.io/v1", "RoleBinding", &binding),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "devs"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}],
            "roleRef": {"apiGroup": "", "kind": "Role", "name": "edit"}
        })
    );
}

/// `kubectl create token builder` and `kubectl auth can-i` as a Go client writes their bodies,
/// and a denial as kube-apiserver answers it: Go's zero values where the field has no
/// `omitempty` (`allowed: false`, an empty `audiences`), none where it has.
#[test]
fn review_bodies_from_go_decode_to_kubernetes_json() {
    let request = authentication::TokenRequest {
        metadata: Some(named_in("default", "builder")),
        spec: Some(authentication::TokenRequestSpec {
            audiences: vec![],
            expiration_seconds: Some(3600),
            bound_object_ref: None,
        }),
        status: Some(authentication::TokenRequestStatus {
            token: Some(String::new()),
            expiration_timestamp: Some(meta::Time::default()),
        }),
    };
    assert_eq!(
        decoded_from_go("authentication.k8s.io/v1", "TokenRequest", &request),
        json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "metadata": {"name": "builder", "namespace": "default"},
            "spec": {"audiences": [], "expirationSeconds": 3600},
            "status": {"token": ""}
        })
    );

    let review = authorization::SelfSubjectAccessReview {
        metadata: Some(meta::ObjectMeta::default()),
        spec: Some(authorization::SelfSubjectAccessReviewSpec {
            resource_attributes: Some(authorization::ResourceAttributes {
                namespace: Some("default".into()),
                verb: Some("create".into()),
                group: Some(String::new()),
                version: Some(String::new()),
                resource: Some("configmaps".into()),
                subresource: Some(String::new()),
                name: Some(String::new()),
                field_selector: None,
                label_selector: None,
            }),
            non_resource_attributes: None,
        }),
        status: Some(authorization::SubjectAccessReviewStatus {
            allowed: Some(false),
            denied: Some(false),
            reason: Some(String::new()),
            evaluation_error: Some(String::new()),
        }),
    };
    assert_eq!(
        decoded_from_go(
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            &review
        ),
        json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "metadata": {},
            "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "configmaps"}},
            "status": {"allowed": false}
        })
    );
}

#[test]
fn extra_values_are_lists_of_strings_in_json() {
    let mut review = access_fixtures::self_subject_review();
    review["status"]["userInfo"]["extra"]["scopes"] = json!("a");
    let err = super::encode(&review).unwrap_err().to_string();
    assert!(err.contains("status.userInfo.extra[scopes]"), "{err}");
    review["status"]["userInfo"]["extra"]["scopes"] = json!(["a", 1]);
    let err = super::encode(&review).unwrap_err().to_string();
    assert!(err.contains("extra[scopes][1]"), "{err}");
}
