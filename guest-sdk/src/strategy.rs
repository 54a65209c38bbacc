//! The `Strategy` trait an author implements.

use serde::{de::DeserializeOwned, Serialize};

use crate::context::Context;
use crate::field::FieldError;
use crate::lazy::LazyObject;
use crate::manifest::{GroupKind, HostFunction, Operation, Resource};

/// A resource's behaviour. Every method defaults to Kubernetes' behaviour for custom resources,
/// so an implementation overrides only what it changes; with [`crate::strategy`] on the `impl`
/// block, [`Self::OPERATIONS`] lists exactly what it implements.
///
/// `Object` is what the methods see: [`serde_json::Value`], or a typed struct. A typed struct must
/// keep the fields it does not name (`#[serde(flatten)] rest: serde_json::Map<String, Value>`),
/// or they are dropped from the stored object.
///
/// # Examples
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use strategy_guest_sdk::{Context, Resource, Scope, Strategy};
///
/// #[derive(Serialize, Deserialize)]
/// struct Widget {
///     #[serde(default)]
///     status: serde_json::Value,
///     #[serde(flatten)]
///     rest: serde_json::Map<String, serde_json::Value>,
/// }
///
/// #[derive(Default)]
/// struct Widgets;
///
/// impl Strategy for Widgets {
///     type Object = Widget;
///     const NAME: &'static str = "widgets";
///     const RESOURCES: &'static [Resource] =
///         &[Resource::new("example.com", "v1", "Widget", "widgets", Scope::Namespaced)];
///
///     fn prepare_for_create(&self, _ctx: &Context, obj: &mut Widget) {
///         obj.status = serde_json::Value::Null; // clients do not set status
///     }
/// }
/// ```
pub trait Strategy {
    /// The object type the methods work on: a typed serde struct, a [`serde_json::Value`], or
    /// a [`crate::LazyObject`] that parses only what the strategy reads (and answers the host
    /// with its changes alone).
    type Object: Serialize + DeserializeOwned + 'static;

    /// The module's name, for the host's logs, metrics and errors.
    const NAME: &'static str;

    /// The resources this module is the strategy of.
    const RESOURCES: &'static [Resource];

    /// The operations and hooks implemented; the host does not call the others. Derived by
    /// [`crate::strategy`] from the methods of the `impl` block; without it, the before-write
    /// operations, and any hook must be listed here by hand.
    const OPERATIONS: &'static [Operation] = Operation::BEFORE_WRITE;

    /// Whether conversions go through [`Strategy::convert_lazily`] rather than
    /// [`Strategy::convert`]. Derived by [`crate::strategy`] (true when the block implements
    /// `convert_lazily`); without it, set it by hand with that method.
    const CONVERTS_LAZILY: bool = false;

    /// Host functions the module calls besides `log`.
    const HOST_FUNCTIONS: &'static [HostFunction] = &[];

    /// The resources this module's After hooks may create or update with
    /// [`crate::host::apply`] (which needs [`HostFunction::Apply`] in [`Self::HOST_FUNCTIONS`]).
    /// The host refuses to load a module declaring some without the grant, and refuses each
    /// `apply` of an object whose group and kind are not listed, whatever its version.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use strategy_guest_sdk::{host, Context, GroupKind, HostFunction, Operation, Resource, Scope, Strategy};
    ///
    /// struct Teams;
    ///
    /// impl Strategy for Teams {
    ///     type Object = Value;
    ///     const NAME: &'static str = "teams";
    ///     const RESOURCES: &'static [Resource] =
    ///         &[Resource::new("example.com", "v1", "Team", "teams", Scope::Cluster)];
    ///     const OPERATIONS: &'static [Operation] = &[Operation::AfterCreate];
    ///     const HOST_FUNCTIONS: &'static [HostFunction] = &[HostFunction::Apply];
    ///     const APPLIES: &'static [GroupKind] = &[GroupKind::core("Namespace")];
    ///
    ///     fn after_create(&self, _ctx: &Context, obj: &Value) -> Result<(), String> {
    ///         let ns = json!({"apiVersion": "v1", "kind": "Namespace",
    ///                         "metadata": {"name": obj["metadata"]["name"]}});
    ///         host::apply(&ns).map(drop)
    ///     }
    /// }
    /// # Teams.after_create(&Context::default(), &json!({"metadata": {"name": "a"}})).unwrap();
    /// # assert_eq!(host::testing::take_applied()[0]["kind"], "Namespace");
    /// ```
    const APPLIES: &'static [GroupKind] = &[];

    /// Clears what clients may not set and fills defaults on a new object.
    fn prepare_for_create(&self, _ctx: &Context, _obj: &mut Self::Object) {}

    /// Validates a new object; any error fails the create with 422 Invalid.
    fn validate(&self, _ctx: &Context, _obj: &Self::Object) -> Vec<FieldError> {
        Vec::new()
    }

    /// Warnings for the client on a create that passed validation.
    fn warnings_on_create(&self, _ctx: &Context, _obj: &Self::Object) -> Vec<String> {
        Vec::new()
    }

    /// Normalizes an object that passed validation, before it is stored (create and update).
    fn canonicalize(&self, _ctx: &Context, _obj: &mut Self::Object) {}

    /// Prepares `new` given `old`, e.g. keeps `old`'s status on a main-resource update.
    fn prepare_for_update(&self, _ctx: &Context, _new: &mut Self::Object, _old: &Self::Object) {}

    /// Validates an update (call [`Self::validate`] from here to check `new` itself too).
    fn validate_update(
        &self,
        _ctx: &Context,
        _new: &Self::Object,
        _old: &Self::Object,
    ) -> Vec<FieldError> {
        Vec::new()
    }

    /// Warnings for the client on an update that passed validation.
    fn warnings_on_update(
        &self,
        _ctx: &Context,
        _new: &Self::Object,
        _old: &Self::Object,
    ) -> Vec<String> {
        Vec::new()
    }

    /// Whether a PUT of a missing object creates it (asked once, when the module loads).
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether a PUT without a resourceVersion is accepted (asked once, when the module loads).
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// May refuse a deletion with field errors (422).
    fn before_delete(&self, _ctx: &Context, _obj: &Self::Object) -> Vec<FieldError> {
        Vec::new()
    }

    /// Runs after a create is committed. An error is logged and counted; the write stays.
    fn after_create(&self, _ctx: &Context, _obj: &Self::Object) -> Result<(), String> {
        Ok(())
    }

    /// Runs after an update is committed.
    fn after_update(
        &self,
        _ctx: &Context,
        _new: &Self::Object,
        _old: &Self::Object,
    ) -> Result<(), String> {
        Ok(())
    }

    /// Runs after a delete is committed.
    fn after_delete(&self, _ctx: &Context, _obj: &Self::Object) -> Result<(), String> {
        Ok(())
    }

    /// Converts `obj` — an object of one of [`Self::RESOURCES`] at the version its `apiVersion`
    /// names — to `desired_api_version` (`group/version`), as a conversion webhook would; list
    /// [`Operation::Convert`] in [`Self::OPERATIONS`]. The host asks this instead of the CRD's
    /// `spec.conversion` and checks the answer as Kubernetes checks a webhook's: the
    /// `apiVersion` asked for, the same kind, and only labels and annotations of the metadata
    /// changed. A conversion must round-trip: [`crate::conversion::round_trip`] checks one
    /// natively, and the host refuses a new version of the module that does not round-trip the
    /// stored objects it samples.
    ///
    /// Works on JSON rather than [`Self::Object`]: the object is at another version than the
    /// one the other methods see.
    ///
    /// # Errors
    /// Why the object cannot be converted (the request fails with 500 naming the module).
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use strategy_guest_sdk::{conversion, Context, Operation, Resource, Scope, Strategy};
    ///
    /// struct Widgets;
    ///
    /// impl Strategy for Widgets {
    ///     type Object = Value;
    ///     const NAME: &'static str = "widgets";
    ///     const RESOURCES: &'static [Resource] =
    ///         &[Resource::new("example.com", "v2", "Widget", "widgets", Scope::Namespaced)];
    ///     const OPERATIONS: &'static [Operation] = &[Operation::Convert];
    ///
    ///     // v1 calls it `size`, v2 `replicas`.
    ///     fn convert(&self, _ctx: &Context, mut obj: Value, desired: &str) -> Result<Value, String> {
    ///         let (from, to) = if desired.ends_with("/v2") { ("size", "replicas") } else { ("replicas", "size") };
    ///         if let Some(n) = obj["spec"].as_object_mut().and_then(|s| s.remove(from)) {
    ///             obj["spec"][to] = n;
    ///         }
    ///         obj["apiVersion"] = desired.into();
    ///         Ok(obj)
    ///     }
    /// }
    ///
    /// let v1 = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"size": 3}});
    /// let v2 = Widgets.convert(&Context::default(), v1.clone(), "example.com/v2").unwrap();
    /// assert_eq!(v2["spec"], json!({"replicas": 3}));
    /// conversion::round_trip(&Widgets, &v1, "example.com/v2").unwrap();
    /// ```
    fn convert(
        &self,
        _ctx: &Context,
        _obj: serde_json::Value,
        _desired_api_version: &str,
    ) -> Result<serde_json::Value, String> {
        Err("this module does not convert objects".into())
    }

    /// [`Strategy::convert`] on a [`LazyObject`]: implement this one instead when a conversion
    /// moves a few fields of large objects. Only the members it reads or changes are parsed,
    /// and every other member (`metadata` among them) goes back as the text it came as, which
    /// the host then takes without parsing it either. Called when
    /// [`Strategy::CONVERTS_LAZILY`]; the default converts through [`Strategy::convert`].
    ///
    /// # Errors
    /// As [`Strategy::convert`].
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use strategy_guest_sdk::{conversion, strategy, Context, LazyObject, Resource, Scope, Strategy};
    ///
    /// struct Widgets;
    ///
    /// #[strategy]
    /// impl Strategy for Widgets {
    ///     type Object = Value;
    ///     const NAME: &'static str = "widgets";
    ///     const RESOURCES: &'static [Resource] =
    ///         &[Resource::new("example.com", "v2", "Widget", "widgets", Scope::Namespaced)];
    ///
    ///     // v1 calls it `size`, v2 `replicas`.
    ///     fn convert_lazily(&self, _: &Context, mut obj: LazyObject, desired: &str) -> Result<LazyObject, String> {
    ///         let (from, to) = if desired.ends_with("/v2") { ("size", "replicas") } else { ("replicas", "size") };
    ///         if let Some(spec) = obj.object_mut(&["spec"]) {
    ///             if let Some(n) = spec.get::<Value>(&[from]).map_err(|e| e.to_string())? {
    ///                 spec.remove(from);
    ///                 spec.insert(to, n);
    ///             }
    ///         }
    ///         obj.insert("apiVersion", desired);
    ///         Ok(obj)
    ///     }
    /// }
    ///
    /// assert!(Widgets::CONVERTS_LAZILY);
    /// let v1 = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"size": 3}});
    /// conversion::round_trip(&Widgets, &v1, "example.com/v2").unwrap();
    /// ```
    fn convert_lazily(
        &self,
        ctx: &Context,
        obj: LazyObject,
        desired_api_version: &str,
    ) -> Result<LazyObject, String> {
        let value = serde_json::to_value(&obj).map_err(|e| e.to_string())?;
        let converted = self.convert(ctx, value, desired_api_version)?;
        let json = serde_json::to_vec(&converted).map_err(|e| e.to_string())?;
        serde_json::from_slice(&json).map_err(|e| format!("the converted object: {e}"))
    }
}
