//! The `SubjectAccessReview` an external authorizer — a webhook, or an authorizer module — is
//! asked with, and its answered `status` read back as a [`Decision`].

use serde_json::{json, Map, Value};

use crate::{Attributes, Decision};

/// The `spec` of the review for `a` (fields Kubernetes leaves out when empty are left out).
pub(super) fn review_spec(a: &Attributes, version: &str) -> Value {
    let mut spec = Map::new();
    let put = |map: &mut Map<String, Value>, key: &str, value: &str| {
        if !value.is_empty() {
            map.insert(key.into(), json!(value));
        }
    };
    if a.resource_request {
        let mut r = Map::new();
        put(&mut r, "namespace", &a.namespace);
        put(&mut r, "verb", &a.verb);
        put(&mut r, "group", &a.api_group);
        put(&mut r, "version", &a.api_version);
        put(&mut r, "resource", &a.resource);
        put(&mut r, "subresource", &a.subresource);
        put(&mut r, "name", &a.name);
        spec.insert("resourceAttributes".into(), Value::Object(r));
    } else {
        let mut n = Map::new();
        put(&mut n, "path", &a.path);
        put(&mut n, "verb", &a.verb);
        spec.insert("nonResourceAttributes".into(), Value::Object(n));
    }
    put(&mut spec, "user", &a.user.username);
    if !a.user.groups.is_empty() {
        // v1beta1 names the groups `group`.
        let key = if version == "v1beta1" {
            "group"
        } else {
            "groups"
        };
        spec.insert(key.into(), json!(a.user.groups));
    }
    if !a.user.extra.is_empty() {
        spec.insert("extra".into(), json!(a.user.extra));
    }
    put(&mut spec, "uid", &a.user.uid);
    Value::Object(spec)
}

/// The review of `spec` at `authorization.k8s.io/{version}`, as kube-apiserver sends it.
pub(super) fn review(version: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("authorization.k8s.io/{version}"),
        "kind": "SubjectAccessReview",
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": {"allowed": false},
    })
}

/// The decision a review's `status` gives: allowed, else denied, else no opinion (with the
/// reason in each).
pub(super) fn decision(status: &Value) -> Decision {
    let reason = status["reason"].as_str().unwrap_or_default().to_string();
    if status["allowed"] == true {
        Decision::Allow(reason)
    } else if status["denied"] == true {
        Decision::Deny(reason)
    } else {
        Decision::NoOpinion(reason)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::user::UserInfo;

    /// jane (group dev) lists pods in `namespace`.
    pub(in crate::structured) fn pods(namespace: &str) -> Attributes {
        Attributes {
            user: UserInfo {
                username: "jane".into(),
                groups: vec!["dev".into()],
                ..UserInfo::default()
            },
            verb: "list".into(),
            resource_request: true,
            api_version: "v1".into(),
            resource: "pods".into(),
            namespace: namespace.into(),
            ..Attributes::default()
        }
    }

    #[test]
    fn the_review_spec_leaves_empty_fields_out_and_v1beta1_names_groups_group() {
        let spec = review_spec(&pods("team"), "v1");
        assert_eq!(
            spec,
            json!({"resourceAttributes": {"namespace": "team", "verb": "list", "version": "v1", "resource": "pods"},
                   "user": "jane", "groups": ["dev"]})
        );
        assert_eq!(review_spec(&pods(""), "v1beta1")["group"], json!(["dev"]));
        let path = Attributes {
            verb: "get".into(),
            path: "/healthz".into(),
            ..Attributes::default()
        };
        assert_eq!(
            review_spec(&path, "v1"),
            json!({"nonResourceAttributes": {"path": "/healthz", "verb": "get"}})
        );
    }

    #[test]
    fn allowed_wins_then_denied_then_no_opinion() {
        assert_eq!(
            decision(&json!({"allowed": true, "denied": true, "reason": "r"})),
            Decision::Allow("r".into())
        );
        assert_eq!(
            decision(&json!({"allowed": false, "denied": true})),
            Decision::Deny(String::new())
        );
        assert_eq!(
            decision(&json!({"allowed": false})),
            Decision::NoOpinion(String::new())
        );
    }
}
