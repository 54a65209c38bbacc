//! The policy: parsing, validation in Kubernetes' words, and matching (first match wins).

use super::{non_resource, resource, user};
use crate::audit::event::{Level, Stage};
use crate::audit::policy::Policy;
use crate::audit::Error;
use strategy_host_authorization::Attributes;

fn policy(yaml: &str) -> Policy {
    let (policy, ignored) = Policy::parse(yaml).unwrap();
    assert!(ignored.is_empty(), "{ignored:?}");
    policy
}

/// The policy of these rules (YAML), after the usual head.
fn rules(yaml: &str) -> Policy {
    policy(&format!("{HEAD}rules:\n{yaml}"))
}

fn level(p: &Policy, attrs: &Attributes) -> Level {
    p.evaluate(attrs).level
}

/// Asserts the level `p` decides for each request.
fn assert_levels<const N: usize>(p: &Policy, cases: [(Attributes, Level); N]) {
    for (attrs, want) in cases {
        assert_eq!(level(p, &attrs), want, "{attrs:?}");
    }
}

fn problem(yaml: &str) -> String {
    Policy::parse(yaml).unwrap_err().to_string()
}

const HEAD: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\n";

#[test]
fn without_rules_matching_a_request_it_is_not_audited() {
    let p = rules("- level: Metadata\n  users: [bob]\n");
    assert_eq!(
        level(&p, &resource("get", "", "pods", "ns", "a")),
        Level::None
    );
}

#[test]
fn the_first_matching_rule_decides() {
    let p = rules(
        "- level: None
  resources: [{group: '', resources: [events]}]
- level: RequestResponse
  resources: [{group: '', resources: [events, pods]}]
- level: Metadata
",
    );
    assert_levels(
        &p,
        [
            (resource("get", "", "events", "ns", ""), Level::None),
            (
                resource("get", "", "pods", "ns", ""),
                Level::RequestResponse,
            ),
            (resource("get", "", "secrets", "ns", ""), Level::Metadata),
            (non_resource("get", "/healthz"), Level::Metadata),
        ],
    );
}

#[test]
fn users_groups_and_verbs_must_all_match() {
    let p = rules(
        "- level: Request
  users: [alice, bob]
  userGroups: [admins, devs]
  verbs: [create, update]
",
    );
    let mut attrs = resource("create", "", "pods", "ns", "");
    assert_eq!(level(&p, &attrs), Level::Request);
    attrs.verb = "get".into();
    assert_eq!(level(&p, &attrs), Level::None, "verb");
    attrs.verb = "update".into();
    attrs.user = user("carol", &["devs"]);
    assert_eq!(level(&p, &attrs), Level::None, "user");
    attrs.user = user("bob", &["system:authenticated"]);
    assert_eq!(level(&p, &attrs), Level::None, "group");
    attrs.user = user("bob", &["admins"]);
    assert_eq!(level(&p, &attrs), Level::Request);
}

#[test]
fn resources_name_subresources_as_kubernetes_does() {
    let p = rules(
        "- level: None
  resources: [{group: '', resources: [pods/log]}]
- level: Request
  resources: [{group: '', resources: ['*/status']}]
- level: RequestResponse
  resources: [{group: apps, resources: ['deployments/*']}]
- level: Metadata
  resources: [{group: '', resources: [pods]}]
",
    );
    let at = |r: &str, g: &str| level(&p, &resource("get", g, r, "ns", "x"));
    assert_eq!(at("pods/log", ""), Level::None);
    assert_eq!(
        at("pods", ""),
        Level::Metadata,
        "pods does not match pods/log"
    );
    assert_eq!(
        at("pods/exec", ""),
        Level::None,
        "pods names no subresource"
    );
    assert_eq!(at("pods/status", ""), Level::Request);
    assert_eq!(at("widgets/status", ""), Level::Request);
    assert_eq!(at("widgets/status", "apps"), Level::None, "other group");
    assert_eq!(at("deployments", "apps"), Level::RequestResponse);
    assert_eq!(at("deployments/scale", "apps"), Level::RequestResponse);
    assert_eq!(at("deployments", ""), Level::None);
}

#[test]
fn star_and_a_group_alone_match_every_resource_of_the_group() {
    let p = rules(
        "- level: Request
  resources: [{group: rbac.authorization.k8s.io}]
- level: Metadata
  resources: [{group: apps, resources: ['*']}]
",
    );
    let rbac = "rbac.authorization.k8s.io";
    assert_levels(
        &p,
        [
            (resource("get", rbac, "roles", "ns", ""), Level::Request),
            (
                resource("get", "apps", "deployments/scale", "ns", ""),
                Level::Metadata,
            ),
            (resource("get", "", "pods", "ns", ""), Level::None),
            (non_resource("get", "/apis"), Level::None),
        ],
    );
}

#[test]
fn resource_names_narrow_a_rule() {
    let p = rules(
        "- level: RequestResponse
  resources: [{group: '', resources: [configmaps], resourceNames: [controller-leader]}]
- level: Metadata
",
    );
    let cm = |name: &str| {
        level(
            &p,
            &resource("update", "", "configmaps", "kube-system", name),
        )
    };
    assert_eq!(cm("controller-leader"), Level::RequestResponse);
    assert_eq!(cm("other"), Level::Metadata);
    assert_eq!(cm(""), Level::Metadata);
}

#[test]
fn namespaces_with_the_empty_one_for_cluster_scope() {
    let p = rules(
        "- level: Request
  namespaces: [kube-system]
- level: RequestResponse
  namespaces: ['']
",
    );
    assert_levels(
        &p,
        [
            (
                resource("get", "", "pods", "kube-system", ""),
                Level::Request,
            ),
            (
                resource("get", "", "namespaces", "", "x"),
                Level::RequestResponse,
            ),
            (resource("get", "", "pods", "default", ""), Level::None),
            // Namespaces select resource requests only.
            (non_resource("get", "/healthz"), Level::None),
        ],
    );
}

#[test]
fn non_resource_urls_match_exactly_or_by_a_trailing_star() {
    let p = rules(
        "- level: None
  nonResourceURLs: [/healthz*, /version]
- level: Request
  nonResourceURLs: ['*']
",
    );
    assert_levels(
        &p,
        [
            (non_resource("get", "/healthz"), Level::None),
            (non_resource("get", "/healthz/etcd"), Level::None),
            (non_resource("get", "/version"), Level::None),
            (non_resource("get", "/version/x"), Level::Request),
            (non_resource("get", "/metrics"), Level::Request),
            // URL rules never match resource requests.
            (resource("get", "", "pods", "ns", ""), Level::None),
        ],
    );
}

#[test]
fn omit_stages_join_the_policys_and_managed_fields_follow_the_rule() {
    let p = policy(&format!(
        "{HEAD}omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: Request
  verbs: [create]
  omitStages: [ResponseStarted]
  omitManagedFields: false
- level: Metadata
  verbs: [get]
"
    ));
    let create = p.evaluate(&resource("create", "", "pods", "ns", ""));
    assert!(create.omit_stages.contains(Stage::RequestReceived));
    assert!(create.omit_stages.contains(Stage::ResponseStarted));
    assert!(!create.omit_stages.contains(Stage::ResponseComplete));
    assert!(!create.omit_managed_fields);
    let get = p.evaluate(&resource("get", "", "pods", "ns", ""));
    assert!(get.omit_stages.contains(Stage::RequestReceived));
    assert!(!get.omit_stages.contains(Stage::ResponseStarted));
    assert!(get.omit_managed_fields);
    let none = p.evaluate(&resource("delete", "", "pods", "ns", ""));
    assert_eq!(none.level, Level::None);
    assert!(none.omit_stages.contains(Stage::RequestReceived));
}

#[test]
fn a_single_level_applies_to_every_request() {
    let p = Policy::single(Level::Request);
    assert_levels(
        &p,
        [
            (resource("get", "", "pods", "", ""), Level::Request),
            (non_resource("get", "/healthz"), Level::Request),
        ],
    );
}

#[test]
fn json_policies_are_read_too() {
    let p = policy(
        r#"{"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "metadata": {"name": "x"},
	"rules": [{"level": "Request", "nonResourceURLs": ["/api*"]}]}"#,
    );
    assert_eq!(level(&p, &non_resource("get", "/apis")), Level::Request);
}

#[test]
fn unknown_fields_are_ignored_and_reported() {
    let (p, ignored) = Policy::parse(&format!(
        "{HEAD}metadata: {{name: x}}\nfoo: 1\nrules:\n- level: Metadata\n  userGroup: [x]\n  resources: [{{group: '', resource: [pods]}}]\n"
    ))
    .unwrap();
    assert_eq!(
        ignored,
        [
            r#"unknown field "foo""#,
            r#"unknown field "rules[0].userGroup""#,
            r#"unknown field "rules[0].resources[0].resource""#
        ]
    );
    assert_eq!(
        level(&p, &resource("get", "", "pods", "", "")),
        Level::Metadata
    );
}

#[test]
fn invalid_policies_say_what_is_wrong_where() {
    let cases = [
        (
            "kind: Policy\nrules:\n- level: Metadata\n",
            "apiVersion: Required value",
        ),
        (
            "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: Metadata}]\n",
            "apiVersion: Unsupported value: \"audit.k8s.io/v1beta1\"",
        ),
        (
            "apiVersion: audit.k8s.io/v1\nkind: Other\nrules: [{level: Metadata}]\n",
            "kind: Unsupported value: \"Other\"",
        ),
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\n", "rules: Required value"),
        ("rules: [{verbs: [get]}]", "rules[0].level: Required value"),
        (
            "rules: [{level: Everything}]",
            r#"rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse""#,
        ),
        (
            "rules: [{level: None, nonResourceURLs: [healthz]}]",
            "rules[0].nonResourceURLs[0]: Invalid value: \"healthz\": non-resource URL rules must begin with a '/' character",
        ),
        (
            "rules: [{level: None, nonResourceURLs: ['/a*b']}]",
            "non-resource URL wildcards '*' must be the final character of the rule",
        ),
        (
            "rules: [{level: None, nonResourceURLs: [/a], namespaces: [x]}]",
            "rules[0].nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs",
        ),
        (
            "rules: [{level: None, resources: [{group: '', resourceNames: [a]}]}]",
            "rules[0].resources[0].resourceNames: Invalid value: using resourceNames requires at least one resource",
        ),
        (
            "rules: [{level: None, resources: [{group: rbac.authorization.k8s.io/v1}]}]",
            "rules[0].resources[0].group: Invalid value: \"rbac.authorization.k8s.io/v1\"",
        ),
        (
            "rules: [{level: None, omitStages: [Done]}]",
            "rules[0].omitStages[0]: Invalid value: \"Done\": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic",
        ),
        (
            "omitStages: [Later]\nrules: [{level: None}]",
            "omitStages[0]: Invalid value: \"Later\"",
        ),
        ("rules: [{level: None, users: alice}]", "failed decoding"),
    ];
    for (body, expected) in cases {
        let text = if body.contains("kind:") {
            body.to_string()
        } else {
            format!("{HEAD}{body}")
        };
        let why = problem(&text);
        assert!(
            why.contains(expected),
            "{body}:\n  {why}\n  lacks {expected}"
        );
    }
    // Every problem is reported at once.
    let both = problem(&format!("{HEAD}rules: [{{level: X}}, {{}}]"));
    assert!(
        both.contains("rules[0].level") && both.contains("rules[1].level"),
        "{both}"
    );
}

#[test]
fn loading_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.yaml");
    std::fs::write(&file, format!("{HEAD}rules: [{{level: Loud}}]\n")).unwrap();
    let err = Policy::load(&file).unwrap_err();
    assert!(matches!(err, Error::InvalidPolicy { .. }));
    let text = err.to_string();
    assert!(
        text.contains("policy.yaml") && text.contains("rules[0].level"),
        "{text}"
    );
    let missing = Policy::load(&dir.path().join("nope.yaml")).unwrap_err();
    assert!(matches!(missing, Error::ReadPolicy { .. }));
    assert!(missing.to_string().contains("nope.yaml"));
    std::fs::write(&file, format!("{HEAD}rules: [{{level: Request}}]\n")).unwrap();
    assert_eq!(Policy::load(&file).unwrap(), Policy::single(Level::Request));
}
