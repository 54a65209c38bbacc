//! The guest SDK for Strategy Host plugins: write a resource's strategy in Rust, compile it to
//! `wasm32-unknown-unknown`, and drop the `.wasm` file into the host's strategy directory.
//!
//! An author implements [`Strategy`] (every method has a default) on a type whose
//! [`Strategy::Object`] is either a typed serde struct or [`serde_json::Value`], in the crate's
//! library (`src/lib.rs`), and exports it with [`export_strategy!`] in the crate's module
//! (`src/main.rs`, two lines), so other strategies can reuse the library. The SDK hides the host/guest ABI (protobuf messages defined in
//! `proto/strategy.proto`, objects as JSON bytes, an allocator pair and one entry point).
//!
//! The same code compiles natively, where the host functions ([`host::log`], [`host::apply`],
//! ...) record into thread-locals instead of calling the host, so a strategy's unit tests are
//! plain `cargo test`.
//!
//! Every method receives a [`Context`]: the resource, whether the request is a dry run, its id,
//! and who makes it ([`UserInfo`], since ABI 1.1), so a strategy can stamp an object's creator
//! or refuse a change by group.
//!
//! # Examples
//!
//! A library, `src/lib.rs`:
//!
//! ```
//! use serde_json::Value;
//! use strategy_guest_sdk::{Context, FieldError, FieldPath, Resource, Scope, Strategy};
//!
//! #[derive(Default)]
//! struct Widgets;
//!
//! impl Strategy for Widgets {
//!     type Object = Value;
//!     const NAME: &'static str = "widgets";
//!     const RESOURCES: &'static [Resource] =
//!         &[Resource::new("example.com", "v1", "Widget", "widgets", Scope::Namespaced)];
//!
//!     fn prepare_for_create(&self, _ctx: &Context, obj: &mut Value) {
//!         if obj["spec"]["size"].is_null() {
//!             obj["spec"]["size"] = 1.into();
//!         }
//!     }
//!
//!     fn validate(&self, _ctx: &Context, obj: &Value) -> Vec<FieldError> {
//!         let size = FieldPath::new("spec").child("size");
//!         match obj["spec"]["size"].as_i64() {
//!             Some(n) if n >= 0 => vec![],
//!             _ => vec![FieldError::invalid(&size, &obj["spec"]["size"], "must be a non-negative integer")],
//!         }
//!     }
//! }
//!
//! // Natively, the strategy is plain Rust to test.
//! let mut obj = serde_json::json!({"spec": {}});
//! Widgets.prepare_for_create(&Context::default(), &mut obj);
//! assert_eq!(obj["spec"]["size"], 1);
//! assert!(Widgets.validate(&Context::default(), &obj).is_empty());
//! ```
//!
//! and its module, `src/main.rs` (for a crate named `strategy-widgets`; see [`export_strategy!`]):
//!
//! ```ignore
//! #![cfg_attr(target_arch = "wasm32", no_main)]
//! strategy_guest_sdk::export_strategy!(strategy_widgets::Widgets);
//! ```
//!
//! `cargo build --release --target wasm32-unknown-unknown` then writes the module to
//! `target/wasm32-unknown-unknown/release/strategy-widgets.wasm`.
#![deny(missing_docs)]

pub mod abi;
#[cfg(all(target_arch = "wasm32", feature = "arena-allocator"))]
pub mod arena;
mod authorizer;
mod authorizer_dispatch;
mod context;
pub mod conversion;
mod dispatch;
#[doc(hidden)]
pub mod export;
mod field;
pub mod host;
pub mod lazy;
mod manifest;
pub mod meta;
mod policy;
mod policy_dispatch;
mod strategy;

/// With the `arena-allocator` feature a module allocates from a per-call arena (see [`arena`])
/// and the host gives it a fresh instance per call; without it (the default) a module uses
/// Rust's own allocator, or one it brings, and its instances are kept across calls.
#[cfg(all(target_arch = "wasm32", feature = "arena-allocator"))]
#[global_allocator]
static ALLOCATOR: arena::CallArena = arena::CallArena::new();

pub use authorizer::{
    AccessRequest, Authorizer, AuthorizerFailurePolicy, Decision, NonResourceAttributes,
    ResourceAttributes,
};
pub use authorizer_dispatch::{authorizer_manifest, handle_authorizer};
pub use context::{Context, ResourceInfo, UserInfo};
pub use dispatch::{answer_object, handle, manifest};
pub use field::{FieldError, FieldErrorKind, FieldPath, FieldValue};
pub use lazy::{LazyObject, MemberError};
pub use manifest::{GroupKind, HostFunction, Operation, Resource, Scope};
pub use policy::{
    AdmissionOperation, AdmissionPolicy, AdmissionRequest, FailurePolicy, LabelRequirement,
    LabelSelector, MatchCondition, MatchResources, Rule, RuleScope, ValidationAction,
};
pub use policy_dispatch::{handle_policy, policy_manifest};
pub use strategy::Strategy;
/// On an `impl Strategy for T` block: derives [`Strategy::OPERATIONS`] from the methods the
/// block implements, so the host calls every hook the module has and no other (a block that
/// also declares `OPERATIONS` does not compile). Without it, `OPERATIONS` defaults to
/// [`Operation::BEFORE_WRITE`] and lists any hook by hand, as modules before it did.
///
/// # Examples
///
/// ```
/// use serde_json::Value;
/// use strategy_guest_sdk::{strategy, Context, Operation, Resource, Scope, Strategy};
///
/// struct Teams;
///
/// #[strategy]
/// impl Strategy for Teams {
///     type Object = Value;
///     const NAME: &'static str = "teams";
///     const RESOURCES: &'static [Resource] =
///         &[Resource::new("example.com", "v1", "Team", "teams", Scope::Cluster)];
///
///     fn prepare_for_create(&self, _ctx: &Context, obj: &mut Value) {
///         obj["spec"]["members"] = Value::Array(vec![]);
///     }
///
///     fn after_delete(&self, _ctx: &Context, _obj: &Value) -> Result<(), String> {
///         Ok(())
///     }
/// }
///
/// assert_eq!(Teams::OPERATIONS, [Operation::PrepareForCreate, Operation::AfterDelete]);
/// ```
pub use strategy_guest_sdk_macros::strategy;

/// The ABI's major version this SDK speaks; the host refuses a module whose manifest names
/// another.
///
/// # Examples
///
/// ```
/// assert_eq!(strategy_guest_sdk::ABI_VERSION, 1);
/// ```
pub const ABI_VERSION: u32 = 1;

/// The ABI's minor version this SDK builds modules for: 5 (1.1 added [`Context::user`], 1.2
/// admission policies, 1.3 version conversion, 1.4 a [`LazyObject`] answered as its changes,
/// 1.5 [`Authorizer`]s). A host loads a module whose minor version is at most its own.
///
/// # Examples
///
/// ```
/// assert_eq!(strategy_guest_sdk::ABI_MINOR_VERSION, 5);
/// ```
pub const ABI_MINOR_VERSION: u32 = 5;

/// Exports a [`Strategy`] type as the module's ABI: `alloc`, `dealloc`, `manifest` and `call`.
///
/// The export belongs to the final module, not to the library that defines the strategy: a
/// strategy crate keeps its [`Strategy`] type in `src/lib.rs` and invokes this macro in
/// `src/main.rs`, Cargo's binary target, which for `wasm32-unknown-unknown` is the `.wasm`
/// module. Another strategy crate can then depend on the library (to reuse its types and rules)
/// without linking a second set of entry points, and any set of strategy crates builds in one
/// `cargo build`. The whole of a module's `src/main.rs`:
///
/// ```
/// #![cfg_attr(target_arch = "wasm32", no_main)]
/// # mod strategy_gadgets {
/// #     use strategy_guest_sdk::{Resource, Scope, Strategy};
/// #     #[derive(Default)]
/// #     pub struct Gadgets;
/// #     impl Strategy for Gadgets {
/// #         type Object = serde_json::Value;
/// #         const NAME: &'static str = "gadgets";
/// #         const RESOURCES: &'static [Resource] =
/// #             &[Resource::new("example.com", "v1", "Gadget", "gadgets", Scope::Cluster)];
/// #     }
/// # }
/// strategy_guest_sdk::export_strategy!(strategy_gadgets::Gadgets);
/// ```
///
/// The type must implement [`Strategy`] and [`Default`] (a fresh value serves each call). On
/// `wasm32` the binary has no `main` (hence `no_main`): the host calls the exports. On other
/// targets the macro expands to an empty `main` instead, so the crate still builds and its
/// library tests natively. Invoke it once, in the module.
#[macro_export]
macro_rules! export_strategy {
    ($strategy:ty) => {
        $crate::__export_abi!($strategy, manifest, call);
    };
}

/// The module's exports (`alloc`, `dealloc`, `manifest`, `call`) over the `export` functions
/// named; what [`export_strategy!`], [`export_admission_policy!`] and [`export_authorizer!`]
/// expand to.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_abi {
    ($ty:ty, $manifest:ident, $call:ident) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            #[no_mangle]
            extern "C" fn alloc(len: u32) -> u32 {
                $crate::export::alloc(len)
            }

            #[no_mangle]
            extern "C" fn dealloc(ptr: u32, len: u32) {
                $crate::export::dealloc(ptr, len)
            }

            #[no_mangle]
            extern "C" fn manifest() -> u64 {
                $crate::export::$manifest::<$ty>()
            }

            #[no_mangle]
            extern "C" fn call(ptr: u32, len: u32) -> u64 {
                $crate::export::$call::<$ty>(ptr, len)
            }

            $crate::__export_reactor!();
        };

        // Natively a module has nothing to run: it is tested through its library.
        #[cfg(not(target_arch = "wasm32"))]
        #[allow(dead_code)]
        fn main() {}
    };
}

/// `_initialize`, the export that makes a module a reactor (WASI's name for a module whose
/// exports are called again and again after one initialisation): the host then keeps its
/// instances across calls. Not exported with the `arena-allocator` feature, whose bump
/// allocator never frees and so needs a fresh instance per call.
#[cfg(not(feature = "arena-allocator"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __export_reactor {
    () => {
        #[no_mangle]
        extern "C" fn _initialize() {}
    };
}

/// Nothing: with the `arena-allocator` feature the module is not a reactor (see the other
/// definition).
#[cfg(feature = "arena-allocator")]
#[doc(hidden)]
#[macro_export]
macro_rules! __export_reactor {
    () => {};
}

/// Exports an [`AdmissionPolicy`] type as the module's ABI, as [`export_strategy!`] exports a
/// strategy: `alloc`, `dealloc`, `manifest` and `call`, in the module's `src/main.rs`.
///
/// ```
/// #![cfg_attr(target_arch = "wasm32", no_main)]
/// # mod policy_owner_label {
/// #     use strategy_guest_sdk::{AdmissionPolicy, MatchResources, Rule};
/// #     #[derive(Default)]
/// #     pub struct OwnerLabel;
/// #     impl AdmissionPolicy for OwnerLabel {
/// #         type Object = serde_json::Value;
/// #         const NAME: &'static str = "owner-label";
/// #         const MATCH: MatchResources = MatchResources::rules(&[Rule::new(&["*"], &["*"], &["*"], &["*"])]);
/// #     }
/// # }
/// strategy_guest_sdk::export_admission_policy!(policy_owner_label::OwnerLabel);
/// ```
///
/// The type must implement [`AdmissionPolicy`] and [`Default`].
#[macro_export]
macro_rules! export_admission_policy {
    ($policy:ty) => {
        $crate::__export_abi!($policy, policy_manifest, policy_call);
    };
}

/// Exports an [`Authorizer`] type as the module's ABI, as [`export_strategy!`] exports a
/// strategy: `alloc`, `dealloc`, `manifest` and `call`, in the module's `src/main.rs`.
///
/// ```
/// #![cfg_attr(target_arch = "wasm32", no_main)]
/// # mod authorizer {
/// #     use strategy_guest_sdk::{AccessRequest, Authorizer, Context, Decision};
/// #     #[derive(Default)]
/// #     pub struct Nothing;
/// #     impl Authorizer for Nothing {
/// #         const NAME: &'static str = "nothing";
/// #         fn authorize(&self, _: &Context, _: &AccessRequest) -> Decision { Decision::NoOpinion }
/// #     }
/// # }
/// strategy_guest_sdk::export_authorizer!(authorizer::Nothing);
/// ```
///
/// The type must implement [`Authorizer`] and [`Default`].
#[macro_export]
macro_rules! export_authorizer {
    ($authorizer:ty) => {
        $crate::__export_abi!($authorizer, authorizer_manifest, authorizer_call);
    };
}
