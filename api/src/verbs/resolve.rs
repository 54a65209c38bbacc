//! Resolution shared by every verb: the served resource of a path, the scope checks (namespace
//! on cluster-scoped resources, subresources the version serves), and the `RequestScope`.

use std::sync::Arc;

use crate::audit::AuditContext;
use crate::route::{ResourcePath, Verb};
use crate::status::Status;
use crate::user::UserInfo;
use strategy_host_registry::definition::ResourceDefinition;
use strategy_host_registry::{
    FieldValidation, Registry, RegistryStore, RequestScope, ServedResource,
};

/// A resource request whose resource is served and whose path fits its scope.
#[derive(Clone)]
pub(crate) struct Resolved {
    /// The served resource.
    pub served: ServedResource,
    /// The request path.
    pub path: ResourcePath,
    /// Who makes the request.
    pub user: Arc<UserInfo>,
    /// The request's audit context (records nothing when the request is not audited).
    pub audit: AuditContext,
}

/// Kubernetes' 404 for a path nothing serves.
pub(crate) fn not_served(uri_path: &str) -> Status {
    Status::not_found(format!(
        "the server could not find the requested resource ({uri_path})"
    ))
}

impl Resolved {
    /// Finds the served resource of `path` for `user` and checks the path fits it; `verb` is `None` when
    /// the method selects none (the caller answers 405 once the resource is known).
    ///
    /// # Errors
    /// 404 when the resource is not served, a cluster-scoped resource is addressed in a
    /// namespace, the subresource is not served, or a namespaced object (or create) has no
    /// namespace.
    pub(crate) fn resolve(
        registry: &Registry,
        user: Arc<UserInfo>,
        path: ResourcePath,
        verb: Option<Verb>,
        uri_path: &str,
    ) -> Result<Self, Status> {
        let served = registry
            .resolve(&path.group, &path.version, &path.plural)
            .ok_or_else(|| not_served(uri_path))?;
        let def = &served.def;
        if path.namespace.is_some() && !def.namespaced {
            return Err(not_served(uri_path));
        }
        if let Some(sub) = &path.subresource {
            let served_sub = def
                .subresources(&path.version)
                .iter()
                .any(|s| s.name == sub);
            if !served_sub {
                return Err(not_served(uri_path));
            }
        }
        // A namespaced collection may be read across namespaces, but an object lives in one.
        if def.namespaced
            && path.namespace.is_none()
            && (path.name.is_some() || verb == Some(Verb::Create))
        {
            return Err(not_served(uri_path));
        }
        Ok(Self {
            served,
            path,
            user,
            audit: AuditContext::default(),
        })
    }

    /// The resource's definition.
    pub(crate) fn def(&self) -> &ResourceDefinition {
        &self.served.def
    }

    /// The resource's store.
    pub(crate) fn store(&self) -> &RegistryStore {
        &self.served.store
    }

    /// The object name of a single-object verb (the route guarantees one).
    pub(crate) fn name(&self) -> &str {
        self.path.name.as_deref().unwrap_or_default()
    }

    /// The scope of a read.
    pub(crate) fn read_scope(&self) -> RequestScope {
        self.scope(false, FieldValidation::default())
    }

    /// The scope of a request with the given write parameters.
    pub(crate) fn scope(&self, dry_run: bool, field_validation: FieldValidation) -> RequestScope {
        RequestScope {
            version: self.path.version.clone(),
            namespace: self.path.namespace.clone(),
            dry_run,
            request_id: format!("{:016x}", rand::random::<u64>()),
            subresource: self.path.subresource.clone(),
            field_validation,
            hook_depth: 0,
            field_manager: String::new(),
            applying: false,
            user: self.user.clone(),
            audit: self.audit.is_audited().then(|| {
                Arc::new(self.audit.clone())
                    as Arc<dyn strategy_host_registry::admission::AuditAnnotations>
            }),
        }
    }
}
