//! The `AdmissionPolicy` trait an author implements for one policy guarding many resources, and
//! the declaration of which writes it is asked about, in the vocabulary of a Kubernetes
//! `ValidatingAdmissionPolicyBinding` (resource rules, namespace and object selectors, match
//! conditions, validation actions, failure policy).

use serde::{de::DeserializeOwned, Serialize};
use serde_json::{json, Map, Value};

use crate::context::Context;
use crate::field::FieldError;

/// Whether a rule names namespaced resources, cluster-scoped ones, or both (Kubernetes' `scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleScope {
    /// `*`: both.
    All,
    /// `Namespaced`.
    Namespaced,
    /// `Cluster`.
    Cluster,
}

/// One resource rule (Kubernetes' `NamedRuleWithOperations`): the operations (`CREATE`,
/// `UPDATE`, `DELETE`, `*`), API groups (`""` is the core group), versions and resources
/// (`configmaps`, `*`, `deployments/status`, `*/*`) it names. `*` names every value.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::{Rule, RuleScope};
/// const EVERY_NAMESPACED_WRITE: Rule =
///     Rule::new(&["CREATE", "UPDATE"], &["*"], &["*"], &["*"]).scoped(RuleScope::Namespaced);
/// assert_eq!(EVERY_NAMESPACED_WRITE.scope, RuleScope::Namespaced);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// `CREATE`, `UPDATE`, `DELETE` or `*`.
    pub operations: &'static [&'static str],
    /// API groups; `""` is the core group.
    pub api_groups: &'static [&'static str],
    /// API versions.
    pub api_versions: &'static [&'static str],
    /// Plural resources, with `/subresource` for subresources.
    pub resources: &'static [&'static str],
    /// Which scopes it names.
    pub scope: RuleScope,
}

impl Rule {
    /// A rule of either scope (usable in `const` items).
    pub const fn new(
        operations: &'static [&'static str],
        api_groups: &'static [&'static str],
        api_versions: &'static [&'static str],
        resources: &'static [&'static str],
    ) -> Self {
        Self {
            operations,
            api_groups,
            api_versions,
            resources,
            scope: RuleScope::All,
        }
    }

    /// The same rule, limited to `scope`.
    pub const fn scoped(self, scope: RuleScope) -> Self {
        Self { scope, ..self }
    }

    fn to_json(self) -> Value {
        let scope = match self.scope {
            RuleScope::All => "*",
            RuleScope::Namespaced => "Namespaced",
            RuleScope::Cluster => "Cluster",
        };
        json!({
            "operations": self.operations,
            "apiGroups": self.api_groups,
            "apiVersions": self.api_versions,
            "resources": self.resources,
            "scope": scope,
        })
    }
}

/// One requirement of a label selector: `key` with `operator` `In`, `NotIn` (over `values`),
/// `Exists` or `DoesNotExist`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabelRequirement {
    /// The label's key.
    pub key: &'static str,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: &'static str,
    /// The values for `In` and `NotIn`.
    pub values: &'static [&'static str],
}

/// A Kubernetes label selector; the empty one selects everything.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::{LabelRequirement, LabelSelector};
/// const NOT_SYSTEM: LabelSelector = LabelSelector::EVERYTHING.with_expressions(&[LabelRequirement {
///     key: "kubernetes.io/metadata.name",
///     operator: "NotIn",
///     values: &["kube-system"],
/// }]);
/// assert_eq!(NOT_SYSTEM.match_expressions.len(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabelSelector {
    /// Labels that must have these values.
    pub match_labels: &'static [(&'static str, &'static str)],
    /// Requirements that must all hold.
    pub match_expressions: &'static [LabelRequirement],
}

impl LabelSelector {
    /// Selects every object.
    pub const EVERYTHING: Self = Self {
        match_labels: &[],
        match_expressions: &[],
    };

    /// The same selector with `match_labels`.
    pub const fn with_labels(self, match_labels: &'static [(&'static str, &'static str)]) -> Self {
        Self {
            match_labels,
            ..self
        }
    }

    /// The same selector with `match_expressions`.
    pub const fn with_expressions(self, match_expressions: &'static [LabelRequirement]) -> Self {
        Self {
            match_expressions,
            ..self
        }
    }

    fn to_json(self) -> Value {
        let labels: Map<String, Value> = self
            .match_labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        let expressions: Vec<Value> = self
            .match_expressions
            .iter()
            .map(|r| json!({"key": r.key, "operator": r.operator, "values": r.values}))
            .collect();
        json!({"matchLabels": labels, "matchExpressions": expressions})
    }
}

/// Which writes a policy is asked about (Kubernetes' `MatchResources`): those a resource rule
/// names and no exclusion does, in a namespace the namespace selector selects (cluster-scoped
/// objects always pass it), of an object the object selector selects.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::{MatchResources, Rule};
/// const CONFIGMAPS: MatchResources =
///     MatchResources::rules(&[Rule::new(&["CREATE"], &[""], &["v1"], &["configmaps"])]);
/// assert!(CONFIGMAPS.exclude_resource_rules.is_empty());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchResources {
    /// The writes named.
    pub resource_rules: &'static [Rule],
    /// Writes left out even when a rule names them.
    pub exclude_resource_rules: &'static [Rule],
    /// Which namespaces' objects (by the namespace's labels).
    pub namespace_selector: LabelSelector,
    /// Which objects (by their labels, old or new).
    pub object_selector: LabelSelector,
    /// `true` (Kubernetes' `Equivalent`, the default): a rule naming another version of the
    /// same resource matches too; `false` is `Exact`.
    pub equivalent_versions: bool,
}

impl MatchResources {
    /// The writes `rules` name, in every namespace, of every object.
    pub const fn rules(resource_rules: &'static [Rule]) -> Self {
        Self {
            resource_rules,
            exclude_resource_rules: &[],
            namespace_selector: LabelSelector::EVERYTHING,
            object_selector: LabelSelector::EVERYTHING,
            equivalent_versions: true,
        }
    }

    /// The same, leaving out what `rules` name.
    pub const fn excluding(self, exclude_resource_rules: &'static [Rule]) -> Self {
        Self {
            exclude_resource_rules,
            ..self
        }
    }

    /// The same, in the namespaces `selector` selects.
    pub const fn in_namespaces(self, namespace_selector: LabelSelector) -> Self {
        Self {
            namespace_selector,
            ..self
        }
    }

    /// The same, for the objects `selector` selects.
    pub const fn of_objects(self, object_selector: LabelSelector) -> Self {
        Self {
            object_selector,
            ..self
        }
    }

    /// The JSON of Kubernetes' `MatchResources`, as the manifest carries it.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{MatchResources, Rule};
    /// const ALL: MatchResources = MatchResources::rules(&[Rule::new(&["*"], &["*"], &["*"], &["*"])]);
    /// let m = ALL.to_json();
    /// assert_eq!(m["resourceRules"][0]["scope"], "*");
    /// assert_eq!(m["matchPolicy"], "Equivalent");
    /// ```
    pub fn to_json(&self) -> Value {
        let rules = |rules: &[Rule]| rules.iter().map(|r| r.to_json()).collect::<Vec<_>>();
        json!({
            "resourceRules": rules(self.resource_rules),
            "excludeResourceRules": rules(self.exclude_resource_rules),
            "namespaceSelector": self.namespace_selector.to_json(),
            "objectSelector": self.object_selector.to_json(),
            "matchPolicy": if self.equivalent_versions { "Equivalent" } else { "Exact" },
        })
    }
}

/// A CEL condition the write must meet for the policy to be asked (Kubernetes'
/// `matchConditions`), over `object`, `oldObject`, `request` and `namespaceObject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchCondition {
    /// A name for messages.
    pub name: &'static str,
    /// The expression; must evaluate to a bool.
    pub expression: &'static str,
}

/// What a policy's refusal does (Kubernetes' `validationActions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValidationAction {
    /// The write fails (422, with the policy's causes).
    Deny,
    /// The write goes on; the client gets a warning.
    Warn,
    /// The write goes on; the refusal is logged and counted by the host.
    Audit,
}

impl ValidationAction {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "Deny",
            Self::Warn => "Warn",
            Self::Audit => "Audit",
        }
    }
}

/// What a failed call (a trap, a deadline, garbage) does to the write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// The write fails (the default).
    Fail,
    /// The write goes on as if the policy had admitted it.
    Ignore,
}

/// What the write does (Kubernetes' admission operations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdmissionOperation {
    /// A create.
    Create,
    /// An update, patch or apply.
    Update,
    /// A delete.
    Delete,
}

/// One write, as a policy sees it; the resource and the requester are in the call's
/// [`Context`].
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionRequest<T> {
    /// Create, update or delete.
    pub operation: AdmissionOperation,
    /// The object's namespace (empty for a cluster-scoped one).
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The subresource written (`status`), or empty.
    pub subresource: String,
    /// The object as it would be stored (`None` for a delete). A mutating policy changes it.
    pub object: Option<T>,
    /// The object before an update, or the one being deleted.
    pub old_object: Option<T>,
}

/// An admission policy: asked about every write its [`AdmissionPolicy::MATCH`] names, of any
/// resource. A policy that [`AdmissionPolicy::MUTATES`] runs with the mutating admission plugins,
/// before the written resource's own strategy; every policy's [`AdmissionPolicy::validate`] runs
/// with the validating ones, after it. Export it with [`crate::export_admission_policy!`].
///
/// # Examples
///
/// ```
/// use serde_json::Value;
/// use strategy_guest_sdk::{
///     AdmissionOperation, AdmissionPolicy, AdmissionRequest, Context, FieldError, FieldPath,
///     MatchResources, Rule,
/// };
///
/// struct NoLatestTag;
/// impl AdmissionPolicy for NoLatestTag {
///     type Object = Value;
///     const NAME: &'static str = "no-latest-tag";
///     const MATCH: MatchResources =
///         MatchResources::rules(&[Rule::new(&["CREATE", "UPDATE"], &["*"], &["*"], &["*"])]);
///
///     fn validate(&self, _ctx: &Context, request: &AdmissionRequest<Value>) -> Vec<FieldError> {
///         let image = request.object.as_ref().and_then(|o| o["spec"]["image"].as_str());
///         match image {
///             Some(i) if i.ends_with(":latest") => {
///                 vec![FieldError::invalid(&FieldPath::new("spec").child("image"), i, "must not use :latest")]
///             }
///             _ => vec![],
///         }
///     }
/// }
///
/// let request = AdmissionRequest {
///     operation: AdmissionOperation::Create,
///     namespace: "default".into(),
///     name: "web".into(),
///     subresource: String::new(),
///     object: Some(serde_json::json!({"spec": {"image": "nginx:latest"}})),
///     old_object: None,
/// };
/// assert_eq!(NoLatestTag.validate(&Context::default(), &request).len(), 1);
/// ```
pub trait AdmissionPolicy {
    /// The type objects decode into: [`serde_json::Value`] for a policy across kinds, or a type
    /// holding just the fields it reads (unknown fields are ignored when it does not deny them).
    type Object: Serialize + DeserializeOwned + 'static;

    /// The policy's name, for messages, logs and metrics.
    const NAME: &'static str;

    /// Which writes the policy is asked about.
    const MATCH: MatchResources;

    /// CEL conditions that must all hold too.
    const MATCH_CONDITIONS: &'static [MatchCondition] = &[];

    /// What a refusal does; `Deny` by default.
    const ACTIONS: &'static [ValidationAction] = &[ValidationAction::Deny];

    /// What a failed call does; `Fail` by default.
    const FAILURE_POLICY: FailurePolicy = FailurePolicy::Fail;

    /// Whether [`AdmissionPolicy::mutate`] is called (in the mutating phase).
    const MUTATES: bool = false;

    /// Changes `request.object` before the written resource's strategy runs (creates and
    /// updates of a policy that [`AdmissionPolicy::MUTATES`]).
    fn mutate(&self, _ctx: &Context, _request: &mut AdmissionRequest<Self::Object>) {}

    /// Refuses the write with one error per cause; none admits it.
    fn validate(
        &self,
        _ctx: &Context,
        _request: &AdmissionRequest<Self::Object>,
    ) -> Vec<FieldError> {
        Vec::new()
    }

    /// Warnings for the client about a write the policy admits.
    fn warnings(&self, _ctx: &Context, _request: &AdmissionRequest<Self::Object>) -> Vec<String> {
        Vec::new()
    }
}
