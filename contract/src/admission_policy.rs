//! The admission-policy contract: what a policy module is asked about writes of resources other
//! than its own. A policy is not a resource's strategy — it serves no resource, is asked in the
//! admission chain's phases and answers for any write its declaration matches — so it has an
//! interface of its own beside [`crate::strategy::Strategy`], sharing only the request's context
//! and the shape of an answer.

use async_trait::async_trait;
use serde_json::Value;

use crate::strategy::{Admission, Answer, StrategyContext};

/// The write admission is asked about (Kubernetes' `admission.Operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A create (or a create on update).
    Create,
    /// An update, patch or apply of an existing object.
    Update,
    /// A delete (the old object is the one being deleted).
    Delete,
}

impl Operation {
    /// The name admission reviews and policy rules use (`CREATE`, `UPDATE`, `DELETE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
        }
    }

    /// The RBAC verb of the operation (`create`, `update`, `delete`), as rollout reports and
    /// `module test` name a phase.
    pub fn verb(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Delete => "delete",
        }
    }
}

/// Where in the admission chain a policy is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdmissionPhase {
    /// With the mutating plugins, before the resource's strategy: the policy may change the
    /// object.
    Mutate,
    /// With the validating plugins, after the strategy: the policy admits or refuses.
    Validate,
}

/// What a policy is told about a write beyond the request's context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionAttributes {
    /// The write.
    pub operation: Operation,
    /// The phase.
    pub phase: AdmissionPhase,
    /// The object's namespace, for a namespaced resource.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// The subresource written (`status`), if any.
    pub subresource: Option<String>,
}

/// An admission policy: asked about the writes its declaration matches, of any resource (the
/// context's `resource` is the one written). Its default admits every write unchanged.
#[async_trait]
pub trait AdmissionPolicy: Send + Sync + 'static {
    /// Admits or refuses a write. `object` is the object written (create and update; in the
    /// mutating phase the policy may change it in place), `old` the stored one (update and
    /// delete). Field errors refuse; warnings go to the client.
    async fn admit(
        &self,
        _ctx: &StrategyContext,
        _attributes: &AdmissionAttributes,
        _object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Answer {
        Ok(Admission::default())
    }
}

/// What a policy with no module in force does: admit every write unchanged.
impl AdmissionPolicy for crate::strategy::DefaultStrategy {}
