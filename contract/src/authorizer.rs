//! The authorizer-module contract: what a module the authorization configuration names is asked
//! about each request. It is asked as an authorization webhook is — with a
//! `SubjectAccessReview` whose `status` it fills in — so a module version's answer is an object
//! like any other phase's, which rollouts (shadow, canary) compare as they compare strategies'.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::strategy::{Admission, Answer, StrategyContext};

/// An authorizer module (or the slot that asks its versions).
#[async_trait]
pub trait AuthorizerModule: Send + Sync + 'static {
    /// Decides `review`, an `authorization.k8s.io/v1` `SubjectAccessReview` whose `spec` says
    /// what is asked, by setting its `status` (`allowed`, `denied`, `reason`); a status left
    /// unset is no opinion. `Err` when the call failed.
    async fn authorize(&self, _ctx: &StrategyContext, _review: &mut Value) -> Answer {
        Ok(Admission::default())
    }

    /// Whether a failed call ends the authorizer chain (`failurePolicy: Deny`) rather than
    /// letting the next authorizer decide.
    fn deny_on_failure(&self) -> bool {
        false
    }
}

/// What a slot with no authorizer module in force does: no opinion.
impl AuthorizerModule for crate::strategy::DefaultStrategy {}

/// Finds authorizer modules by name (the module table, for the authorization configuration).
pub trait AuthorizerModules: Send + Sync {
    /// The authorizer module `name` as its slot asks it, `None` when no version of it is loaded.
    fn authorizer(&self, name: &str) -> Option<Arc<dyn AuthorizerModule>>;
}
