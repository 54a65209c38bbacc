//! The descriptions a module's manifest is made of: the resources it serves, their scope, the
//! operations it implements and the host functions it may call.

use crate::abi;

/// Where objects of a resource live.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::Scope;
/// assert_ne!(Scope::Namespaced, Scope::Cluster);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Objects live in a namespace.
    Namespaced,
    /// Objects are cluster-wide.
    Cluster,
}

/// A resource a module is the strategy of, as it appears in the manifest.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::{Resource, Scope};
/// const WIDGETS: Resource = Resource::new("example.com", "v1", "Widget", "widgets", Scope::Namespaced);
/// assert_eq!(WIDGETS.plural, "widgets");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    /// API group, e.g. `apps.example.com`.
    pub group: &'static str,
    /// The version served, e.g. `v1`.
    pub version: &'static str,
    /// The kind, e.g. `Widget`.
    pub kind: &'static str,
    /// The plural resource name, e.g. `widgets`.
    pub plural: &'static str,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
}

impl Resource {
    /// Describes a resource (usable in `const` items).
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{Resource, Scope};
    /// let r = Resource::new("example.com", "v1", "Widget", "widgets", Scope::Cluster);
    /// assert_eq!(r.kind, "Widget");
    /// ```
    pub const fn new(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
        plural: &'static str,
        scope: Scope,
    ) -> Self {
        Self {
            group,
            version,
            kind,
            plural,
            scope,
        }
    }

    pub(crate) fn to_abi(self) -> abi::Resource {
        abi::Resource {
            group: self.group.into(),
            version: self.version.into(),
            kind: self.kind.into(),
            plural: self.plural.into(),
            scope: match self.scope {
                Scope::Namespaced => abi::Scope::Namespaced,
                Scope::Cluster => abi::Scope::Cluster,
            } as i32,
        }
    }
}

/// A resource named by API group and kind, whatever its version: what a module lists in
/// [`Strategy::APPLIES`](crate::Strategy::APPLIES), the resources its After hooks may create or update with
/// [`crate::host::apply`]. The host refuses `apply` of anything else. The core group is `""`.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::GroupKind;
/// const QUOTAS: GroupKind = GroupKind::new("example.com", "Quota");
/// const NAMESPACES: GroupKind = GroupKind::core("Namespace");
/// assert_eq!((QUOTAS.group, NAMESPACES.group), ("example.com", ""));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupKind {
    /// The API group, e.g. `example.com`; `""` for the core group.
    pub group: &'static str,
    /// The kind, e.g. `Quota`.
    pub kind: &'static str,
}

impl GroupKind {
    /// Names a resource of `group` (usable in `const` items).
    ///
    /// # Examples
    ///
    /// ```
    /// let gk = strategy_guest_sdk::GroupKind::new("example.com", "Quota");
    /// assert_eq!(gk.kind, "Quota");
    /// ```
    pub const fn new(group: &'static str, kind: &'static str) -> Self {
        Self { group, kind }
    }

    /// Names a resource of the core group (`apiVersion: v1`), e.g. `Namespace`.
    ///
    /// # Examples
    ///
    /// ```
    /// let gk = strategy_guest_sdk::GroupKind::core("Namespace");
    /// assert_eq!(gk, strategy_guest_sdk::GroupKind::new("", "Namespace"));
    /// ```
    pub const fn core(kind: &'static str) -> Self {
        Self { group: "", kind }
    }

    pub(crate) fn to_abi(self) -> abi::GroupKind {
        abi::GroupKind {
            group: self.group.into(),
            kind: self.kind.into(),
        }
    }
}

/// The strategy operations and hooks a module can implement (the manifest lists them so the host
/// skips the rest, e.g. does not instantiate the module for a hook it does not have).
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::Operation;
/// assert!(Operation::BEFORE_WRITE.contains(&Operation::Validate));
/// assert!(!Operation::BEFORE_WRITE.contains(&Operation::AfterCreate));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// [`Strategy::prepare_for_create`](crate::Strategy::prepare_for_create).
    PrepareForCreate,
    /// [`Strategy::validate`](crate::Strategy::validate).
    Validate,
    /// [`Strategy::warnings_on_create`](crate::Strategy::warnings_on_create).
    WarningsOnCreate,
    /// [`Strategy::canonicalize`](crate::Strategy::canonicalize).
    Canonicalize,
    /// [`Strategy::prepare_for_update`](crate::Strategy::prepare_for_update).
    PrepareForUpdate,
    /// [`Strategy::validate_update`](crate::Strategy::validate_update).
    ValidateUpdate,
    /// [`Strategy::warnings_on_update`](crate::Strategy::warnings_on_update).
    WarningsOnUpdate,
    /// [`Strategy::allow_create_on_update`](crate::Strategy::allow_create_on_update).
    AllowCreateOnUpdate,
    /// [`Strategy::allow_unconditional_update`](crate::Strategy::allow_unconditional_update).
    AllowUnconditionalUpdate,
    /// [`Strategy::before_delete`](crate::Strategy::before_delete).
    BeforeDelete,
    /// [`Strategy::after_create`](crate::Strategy::after_create).
    AfterCreate,
    /// [`Strategy::after_update`](crate::Strategy::after_update).
    AfterUpdate,
    /// [`Strategy::after_delete`](crate::Strategy::after_delete).
    AfterDelete,
    /// [`Strategy::convert`](crate::Strategy::convert) (ABI 1.3): the module converts its resources' objects between their
    /// versions, in place of the CustomResourceDefinition's `spec.conversion`.
    Convert,
}

impl Operation {
    /// Every before-write operation except `BeforeDelete`: the default of
    /// [`Strategy::OPERATIONS`](crate::Strategy::OPERATIONS).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(strategy_guest_sdk::Operation::BEFORE_WRITE.len(), 9);
    /// ```
    pub const BEFORE_WRITE: &'static [Operation] = &[
        Operation::PrepareForCreate,
        Operation::Validate,
        Operation::WarningsOnCreate,
        Operation::Canonicalize,
        Operation::PrepareForUpdate,
        Operation::ValidateUpdate,
        Operation::WarningsOnUpdate,
        Operation::AllowCreateOnUpdate,
        Operation::AllowUnconditionalUpdate,
    ];

    pub(crate) fn to_abi(self) -> abi::Operation {
        match self {
            Self::PrepareForCreate => abi::Operation::PrepareForCreate,
            Self::Validate => abi::Operation::Validate,
            Self::WarningsOnCreate => abi::Operation::WarningsOnCreate,
            Self::Canonicalize => abi::Operation::Canonicalize,
            Self::PrepareForUpdate => abi::Operation::PrepareForUpdate,
            Self::ValidateUpdate => abi::Operation::ValidateUpdate,
            Self::WarningsOnUpdate => abi::Operation::WarningsOnUpdate,
            Self::AllowCreateOnUpdate => abi::Operation::AllowCreateOnUpdate,
            Self::AllowUnconditionalUpdate => abi::Operation::AllowUnconditionalUpdate,
            Self::BeforeDelete => abi::Operation::BeforeDelete,
            Self::AfterCreate => abi::Operation::AfterCreate,
            Self::AfterUpdate => abi::Operation::AfterUpdate,
            Self::AfterDelete => abi::Operation::AfterDelete,
            Self::Convert => abi::Operation::Convert,
        }
    }
}

/// Host functions a module may ask for in its manifest ([`Strategy::HOST_FUNCTIONS`](crate::Strategy::HOST_FUNCTIONS)).
/// `log` is always granted; the host refuses a module importing a function it did not ask for.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::HostFunction;
/// let wanted: &[HostFunction] = &[HostFunction::Get, HostFunction::Apply];
/// assert_eq!(wanted.len(), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostFunction {
    /// [`crate::host::log`].
    Log,
    /// [`crate::host::get`].
    Get,
    /// [`crate::host::list`].
    List,
    /// [`crate::host::apply`] (After hooks only).
    Apply,
}

impl HostFunction {
    pub(crate) fn to_abi(self) -> abi::HostFunction {
        match self {
            Self::Log => abi::HostFunction::Log,
            Self::Get => abi::HostFunction::Get,
            Self::List => abi::HostFunction::List,
            Self::Apply => abi::HostFunction::Apply,
        }
    }
}
