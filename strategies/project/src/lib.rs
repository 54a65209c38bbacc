//! A Project strategy with After hooks: creating a Project makes sure the project's namespace
//! (named after the project) exists, then applies a default `Quota` in it, through the host's
//! `get` and `apply`; deleting one writes an audit line to the host's log. Each Project records
//! who created it (the requester the host names in the context, ABI 1.1) in the
//! `example.com/created-by` annotation, which no client can set or change.

use serde_json::{json, Value};
use strategy_guest_sdk::meta::{
    annotation, dns1123_label_errors, name, remove_annotation, set_annotation,
};
use strategy_guest_sdk::{
    host, strategy, Context, FieldError, FieldPath, GroupKind, HostFunction, Resource, Scope,
    Strategy,
};

/// The strategy.
#[derive(Debug, Default)]
pub struct Projects;

/// The annotation naming the user who created a project: stamped on create from the requester
/// ([`Context::user`]), kept as it was on every update. A value a client sends is replaced (or
/// dropped, when the host names no user), so the annotation can be trusted.
pub const CREATED_BY: &str = "example.com/created-by";

/// The namespace of a new project, labelled with the project it belongs to.
pub fn project_namespace(project: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": project,
            "labels": {"example.com/project": project}
        }
    })
}

/// The Quota applied in a new project's namespace.
pub fn default_quota(project: &str) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Quota",
        "metadata": {
            "name": "default",
            "namespace": project,
            "labels": {"example.com/project": project}
        },
        "spec": {"pods": 10, "cpu": "4", "memory": "8Gi"}
    })
}

#[strategy]
impl Strategy for Projects {
    type Object = Value;
    const NAME: &'static str = "projects";
    const RESOURCES: &'static [Resource] = &[Resource::new(
        "example.com",
        "v1",
        "Project",
        "projects",
        Scope::Cluster,
    )];
    const HOST_FUNCTIONS: &'static [HostFunction] = &[HostFunction::Get, HostFunction::Apply];
    const APPLIES: &'static [GroupKind] = &[
        GroupKind::core("Namespace"),
        GroupKind::new("example.com", "Quota"),
    ];

    fn prepare_for_create(&self, ctx: &Context, obj: &mut Value) {
        if let Some(o) = obj.as_object_mut() {
            o.remove("status");
        }
        // An empty name: a host older than ABI 1.1 did not say who asks.
        match ctx.user.username.as_str() {
            "" => remove_annotation(obj, CREATED_BY),
            creator => set_annotation(obj, CREATED_BY, creator),
        }
    }

    fn prepare_for_update(&self, _ctx: &Context, new: &mut Value, old: &Value) {
        match annotation(old, CREATED_BY) {
            Some(creator) => set_annotation(new, CREATED_BY, creator),
            None => remove_annotation(new, CREATED_BY),
        }
    }

    fn validate(&self, _ctx: &Context, obj: &Value) -> Vec<FieldError> {
        let path = FieldPath::new("metadata").child("name");
        match name(obj) {
            None => vec![FieldError::required(&path, "a project needs a name")],
            // The name becomes the project's namespace.
            Some(n) => dns1123_label_errors(n)
                .into_iter()
                .map(|m| FieldError::invalid(&path, n, m))
                .collect(),
        }
    }

    fn after_create(&self, ctx: &Context, obj: &Value) -> Result<(), String> {
        if ctx.dry_run {
            return Ok(());
        }
        let project = name(obj).ok_or("the project has no name")?;
        // The Quota needs its namespace. One that exists is left as it is: applying ours would
        // replace its labels and annotations.
        let existing = host::get("", "namespaces", "", project)
            .map_err(|e| format!("reading namespace {project}: {e}"))?;
        if existing.is_none() {
            host::apply(&project_namespace(project))
                .map_err(|e| format!("creating namespace {project}: {e}"))?;
            host::info(&format!("created namespace {project}"));
        }
        host::apply(&default_quota(project))
            .map_err(|e| format!("applying the default Quota: {e}"))?;
        host::info(&format!("applied the default Quota in namespace {project}"));
        Ok(())
    }

    fn after_delete(&self, ctx: &Context, obj: &Value) -> Result<(), String> {
        let uid = obj["metadata"]["uid"].as_str().unwrap_or("");
        host::log(
            host::LogLevel::Info,
            &format!(
                "audit: project {:?} (uid {uid:?}) deleted by {:?} in request {}",
                name(obj).unwrap_or(""),
                ctx.user.username,
                ctx.request_id
            ),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use strategy_guest_sdk::host::{testing, LogLevel};
    use strategy_guest_sdk::UserInfo;

    use super::*;

    fn as_user(username: &str) -> Context {
        Context {
            user: UserInfo {
                username: username.into(),
                groups: vec!["system:authenticated".into()],
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn create_stamps_the_creator_over_what_the_client_sent() {
        let mut obj = json!({"metadata": {"name": "team-a",
            "annotations": {CREATED_BY: "mallory", "note": "kept"}}});
        Projects.prepare_for_create(&as_user("alice"), &mut obj);
        assert_eq!(annotation(&obj, CREATED_BY), Some("alice"));
        assert_eq!(annotation(&obj, "note"), Some("kept"));
    }

    #[test]
    fn without_a_user_the_creator_is_not_stamped_nor_forged() {
        let mut obj =
            json!({"metadata": {"name": "team-a", "annotations": {CREATED_BY: "mallory"}}});
        Projects.prepare_for_create(&Context::default(), &mut obj);
        assert_eq!(obj, json!({"metadata": {"name": "team-a"}}));
    }

    #[test]
    fn update_keeps_the_creator() {
        let old = json!({"metadata": {"name": "team-a", "annotations": {CREATED_BY: "alice"}}});
        for sent in [
            json!({"metadata": {"name": "team-a"}}),
            json!({"metadata": {"name": "team-a", "annotations": {CREATED_BY: "bob"}}}),
        ] {
            let mut new = sent;
            Projects.prepare_for_update(&as_user("bob"), &mut new, &old);
            assert_eq!(annotation(&new, CREATED_BY), Some("alice"), "{new}");
        }
        // A project created without a known user never gains a creator.
        let mut new = json!({"metadata": {"name": "team-a", "annotations": {CREATED_BY: "bob"}}});
        Projects.prepare_for_update(&as_user("bob"), &mut new, &json!({"metadata": {}}));
        assert_eq!(annotation(&new, CREATED_BY), None);
    }

    #[test]
    fn create_makes_the_namespace_then_applies_the_default_quota() {
        let obj = json!({"metadata": {"name": "team-a"}});
        assert!(Projects.validate(&Context::default(), &obj).is_empty());
        Projects.after_create(&Context::default(), &obj).unwrap();
        assert_eq!(
            testing::take_applied(),
            [project_namespace("team-a"), default_quota("team-a")]
        );
    }

    #[test]
    fn an_existing_namespace_is_left_alone() {
        testing::put_object(
            "",
            "namespaces",
            "",
            "team-b",
            json!({"metadata": {"name": "team-b"}}),
        );
        let obj = json!({"metadata": {"name": "team-b"}});
        Projects.after_create(&Context::default(), &obj).unwrap();
        assert_eq!(testing::take_applied(), [default_quota("team-b")]);
    }

    #[test]
    fn every_applied_kind_is_declared() {
        for o in [project_namespace("p"), default_quota("p")] {
            let api_version = o["apiVersion"].as_str().unwrap();
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            assert!(
                Projects::APPLIES
                    .iter()
                    .any(|gk| gk.group == group && gk.kind == o["kind"]),
                "{o}"
            );
        }
    }

    #[test]
    fn dry_run_applies_nothing() {
        let ctx = Context {
            dry_run: true,
            ..Default::default()
        };
        Projects
            .after_create(&ctx, &json!({"metadata": {"name": "team-a"}}))
            .unwrap();
        assert!(testing::take_applied().is_empty());
    }

    #[test]
    fn names_must_be_dns_labels() {
        let errs = Projects.validate(
            &Context::default(),
            &json!({"metadata": {"name": "Team_A"}}),
        );
        assert_eq!(errs[0].field, "metadata.name");
        assert!(!Projects
            .validate(&Context::default(), &json!({}))
            .is_empty());
    }

    #[test]
    fn delete_writes_an_audit_line() {
        testing::take_logs();
        let ctx = Context {
            request_id: "r1".into(),
            ..as_user("alice")
        };
        let obj = json!({"metadata": {"name": "team-a", "uid": "u-1"}});
        Projects.after_delete(&ctx, &obj).unwrap();
        let logs = testing::take_logs();
        assert_eq!(logs.len(), 1);
        assert_eq!(logs[0].0, LogLevel::Info);
        assert_eq!(
            logs[0].1,
            "audit: project \"team-a\" (uid \"u-1\") deleted by \"alice\" in request r1"
        );
    }
}
