//! A Project strategy with After hooks: creating a Project makes sure the project's namespace
//! (named after the project) exists, then applies a default `Quota` in it, through the host's
//! `get` and `apply`; deleting one writes an audit line to the host's log.

use serde_json::{json, Value};
use strategy_guest_sdk::meta::{dns1123_label_errors, name};
use strategy_guest_sdk::{
    export_strategy, host, Context, FieldError, FieldPath, GroupKind, HostFunction, Operation,
    Resource, Scope, Strategy,
};

/// The strategy.
#[derive(Debug, Default)]
pub struct Projects;

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
    const OPERATIONS: &'static [Operation] = &[
        Operation::PrepareForCreate,
        Operation::Validate,
        Operation::AfterCreate,
        Operation::AfterDelete,
    ];
    const HOST_FUNCTIONS: &'static [HostFunction] = &[HostFunction::Get, HostFunction::Apply];
    const APPLIES: &'static [GroupKind] = &[
        GroupKind::core("Namespace"),
        GroupKind::new("example.com", "Quota"),
    ];

    fn prepare_for_create(&self, _ctx: &Context, obj: &mut Value) {
        if let Some(o) = obj.as_object_mut() {
            o.remove("status");
        }
    }

    fn validate(&self, _ctx: &Context, obj: &Value) -> Vec<FieldError> {
        let path = FieldPath::new("metadata").child("name");
        match name(obj) {
            None => vec![FieldError::required(&path, "a project needs a name")],
            // The name becomes the project's namespace.
            Some(n) => dns1123_label_errors(n)
                .into_iter()
                .map(|m| FieldError::invalid(&path, m))
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
                "audit: project {:?} (uid {uid:?}) deleted by request {}",
                name(obj).unwrap_or(""),
                ctx.request_id
            ),
        );
        Ok(())
    }
}

export_strategy!(Projects);

#[cfg(test)]
mod tests {
    use strategy_guest_sdk::host::{testing, LogLevel};

    use super::*;

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
            ..Default::default()
        };
        let obj = json!({"metadata": {"name": "team-a", "uid": "u-1"}});
        Projects.after_delete(&ctx, &obj).unwrap();
        let logs = testing::take_logs();
        assert_eq!(logs.len(), 1);
        assert_eq!(logs[0].0, LogLevel::Info);
        assert!(
            logs[0].1.starts_with("audit: project \"team-a\""),
            "{}",
            logs[0].1
        );
    }
}
