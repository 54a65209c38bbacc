//! Why a module version may not serve what it declares: the checks a version passes before it
//! is swapped in or staged, each refusal recorded in its source's status (and how a
//! `strategymodules` spec's binding of a kind of module is refused).

/// A module version refused before it serves.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A built-in kind whose strategy is the host's own.
    #[error("a built-in resource keeps the host's own strategy")]
    BuiltinKept,
    /// The manifest's plural is not the one the resource is served as.
    #[error("the manifest names the plural {declared:?} but the resource is served as {served:?}")]
    Plural {
        /// The manifest's.
        declared: String,
        /// The served resource's.
        served: String,
    },
    /// The manifest's scope is not the resource's.
    #[error("the manifest says {declared} but the resource is {served}")]
    Scope {
        /// The manifest's (`Namespaced`, `Cluster`).
        declared: &'static str,
        /// The served resource's.
        served: &'static str,
    },
    /// The manifest names a version the resource does not serve.
    #[error("the manifest names version {0:?}, which the resource does not serve")]
    Version(String),
    /// `spec.admissionPolicy` names another policy than the module is.
    #[error("spec.admissionPolicy.name is {bound:?} but the module's policy is {declared:?}")]
    OtherPolicy {
        /// The name the spec binds.
        bound: String,
        /// The module's policy.
        declared: String,
    },
    /// `spec.admissionPolicy` binds a module that is a strategy.
    #[error("spec.admissionPolicy is set but the module is a strategy, not an admission policy")]
    NotAPolicy,
    /// `spec.resource` binds a module that is an admission policy.
    #[error("the module is the admission policy {0:?}: bind it with spec.admissionPolicy, not spec.resource")]
    IsAPolicy(String),
    /// `spec.authorizer` names another authorizer than the module is.
    #[error("spec.authorizer.name is {bound:?} but the module's authorizer is {declared:?}")]
    OtherAuthorizer {
        /// The name the spec binds.
        bound: String,
        /// The module's name.
        declared: String,
    },
    /// `spec.authorizer` binds a module that is not an authorizer.
    #[error("spec.authorizer is set but the module is not an authorizer")]
    NotAnAuthorizer,
    /// `spec.resource` or `spec.admissionPolicy` binds a module that is an authorizer.
    #[error("the module is the authorizer {0:?}: bind it with spec.authorizer")]
    IsAnAuthorizer(String),
    /// `spec.resource` names a resource the module does not declare.
    #[error("spec.resource is {bound} but the module declares only [{}]", declared.join(", "))]
    Undeclared {
        /// `group/kind` the spec binds.
        bound: String,
        /// `group/kind` of each resource the module declares.
        declared: Vec<String>,
    },
    /// Converting a sample to another version and back changed it.
    #[error("the conversion does not round-trip {plural} {name:?}: {from} → {via} → {from} changed it: {patch}")]
    NotRoundTrip {
        /// The resource.
        plural: String,
        /// The sample's name.
        name: String,
        /// Its stored apiVersion.
        from: String,
        /// The apiVersion it went through.
        via: String,
        /// What changed, as a JSON Patch.
        patch: String,
    },
    /// The version could not be pulled as a module that may run (a wrong digest, no wasm
    /// layer).
    #[error("{0}")]
    Pull(String),
    /// Converting a sample failed.
    #[error("converting to {desired} failed: {reason}")]
    Conversion {
        /// The apiVersion asked for.
        desired: String,
        /// Why.
        reason: ConversionFailure,
    },
}

/// How a spec's binding of one kind of module (an authorizer, an admission policy) is refused
/// when it does not match what the module is.
pub(crate) struct KindRefusals {
    /// The spec names another module of that kind (the name bound, the module's name).
    other: fn(String, String) -> Refusal,
    /// The spec binds the kind, and the module is not of it.
    not_one: Refusal,
    /// The module (named) is of that kind, and the spec does not bind it as one.
    is_one: fn(String) -> Refusal,
}

impl KindRefusals {
    /// An authorizer's (`spec.authorizer`).
    pub(crate) const AUTHORIZER: Self = Self {
        other: |bound, declared| Refusal::OtherAuthorizer { bound, declared },
        not_one: Refusal::NotAnAuthorizer,
        is_one: Refusal::IsAnAuthorizer,
    };
    /// An admission policy's (`spec.admissionPolicy`).
    pub(crate) const POLICY: Self = Self {
        other: |bound, declared| Refusal::OtherPolicy { bound, declared },
        not_one: Refusal::NotAPolicy,
        is_one: Refusal::IsAPolicy,
    };

    /// Whether the spec's binding `bound` of this kind binds the module `name` (which is of
    /// this kind when `declared`); `false` when neither is of it.
    ///
    /// # Errors
    /// The refusal of a binding and a module that do not match.
    pub(crate) fn bound(
        self,
        bound: Option<&str>,
        declared: bool,
        name: &str,
    ) -> Result<bool, Refusal> {
        match (bound, declared) {
            (Some(bound), true) if bound == name => Ok(true),
            (Some(bound), true) => Err((self.other)(bound.to_owned(), name.to_owned())),
            (Some(_), false) => Err(self.not_one),
            (None, true) => Err((self.is_one)(name.to_owned())),
            (None, false) => Ok(false),
        }
    }
}

/// Why converting one sample failed.
#[derive(Debug, thiserror::Error)]
pub enum ConversionFailure {
    /// The call failed (trapped, ran out of fuel, ...).
    #[error("{0}")]
    Call(strategy_host_wasm_runtime::CallFailure),
    /// The module answered an error.
    #[error("{0}")]
    Answered(String),
    /// The module answered no object.
    #[error("no object came back")]
    NoObject,
    /// The object answered is not JSON.
    #[error("{0}")]
    NotJson(#[from] serde_json::Error),
    /// The object answered is at another version.
    #[error("it answered apiVersion {0}")]
    OtherVersion(serde_json::Value),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_and_a_module_of_another_kind_are_refused_as_such() {
        let policy = |bound, declared| KindRefusals::POLICY.bound(bound, declared, "owner-label");
        assert!(policy(Some("owner-label"), true).unwrap());
        assert!(!policy(None, false).unwrap());
        let other = policy(Some("other"), true).unwrap_err();
        assert!(
            matches!(&other, Refusal::OtherPolicy { bound, declared }
                if bound == "other" && declared == "owner-label"),
            "{other:?}"
        );
        let not_one = policy(Some("owner-label"), false).unwrap_err();
        assert!(matches!(not_one, Refusal::NotAPolicy), "{not_one:?}");
        let is_one = policy(None, true).unwrap_err();
        assert!(
            matches!(&is_one, Refusal::IsAPolicy(n) if n == "owner-label"),
            "{is_one:?}"
        );
        let authorizer = KindRefusals::AUTHORIZER
            .bound(Some("a"), true, "b")
            .unwrap_err();
        assert!(
            matches!(&authorizer, Refusal::OtherAuthorizer { bound, declared }
                if bound == "a" && declared == "b"),
            "{authorizer:?}"
        );
        let not_one = KindRefusals::AUTHORIZER.bound(Some("a"), false, "a");
        assert!(matches!(not_one, Err(Refusal::NotAnAuthorizer)));
        let is_one = KindRefusals::AUTHORIZER.bound(None, true, "a");
        assert!(matches!(is_one, Err(Refusal::IsAnAuthorizer(n)) if n == "a"));
    }
}
