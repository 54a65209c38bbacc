//! The guest SDK for Strategy Host plugins: write a resource's strategy in Rust, compile it to
//! `wasm32-unknown-unknown`, and drop the `.wasm` file into the host's strategy directory.
//!
//! An author implements [`Strategy`] (every method has a default) on a type whose
//! [`Strategy::Object`] is either a typed serde struct or [`serde_json::Value`], and exports it
//! with [`export_strategy!`]. The SDK hides the host/guest ABI (protobuf messages defined in
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
//! ```
//! use serde_json::Value;
//! use strategy_guest_sdk::{export_strategy, Context, FieldError, FieldPath, Resource, Scope, Strategy};
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
//!             _ => vec![FieldError::invalid(&size, "must be a non-negative integer")],
//!         }
//!     }
//! }
//!
//! export_strategy!(Widgets);
//!
//! let mut obj = serde_json::json!({"spec": {}});
//! Widgets.prepare_for_create(&Context::default(), &mut obj);
//! assert_eq!(obj["spec"]["size"], 1);
//! assert!(Widgets.validate(&Context::default(), &obj).is_empty());
//! ```
#![deny(missing_docs)]

pub mod abi;
#[cfg(all(target_arch = "wasm32", feature = "arena-allocator"))]
pub mod arena;
mod context;
mod dispatch;
#[doc(hidden)]
pub mod export;
mod field;
pub mod host;
pub mod meta;
mod strategy;

/// Every strategy module allocates from a per-call arena (see [`arena`]); turn the
/// `arena-allocator` feature off to bring your own global allocator.
#[cfg(all(target_arch = "wasm32", feature = "arena-allocator"))]
#[global_allocator]
static ALLOCATOR: arena::CallArena = arena::CallArena::new();

pub use context::{Context, ResourceInfo, UserInfo};
pub use dispatch::{handle, manifest};
pub use field::{FieldError, FieldErrorKind, FieldPath};
pub use strategy::{GroupKind, HostFunction, Operation, Resource, Scope, Strategy};

/// The ABI's major version this SDK speaks; the host refuses a module whose manifest names
/// another.
///
/// # Examples
///
/// ```
/// assert_eq!(strategy_guest_sdk::ABI_VERSION, 1);
/// ```
pub const ABI_VERSION: u32 = 1;

/// The ABI's minor version this SDK builds modules for: 1, which added [`Context::user`]. A host
/// loads a module whose minor version is at most its own; one older than 1.1 loads a module of
/// this SDK too (it reads no minor version) but tells it no user.
///
/// # Examples
///
/// ```
/// assert_eq!(strategy_guest_sdk::ABI_MINOR_VERSION, 1);
/// ```
pub const ABI_MINOR_VERSION: u32 = 1;

/// Exports a [`Strategy`] type as the module's ABI: `alloc`, `dealloc`, `manifest` and `call`.
///
/// The type must implement [`Strategy`] and [`Default`] (a fresh value serves each call). On
/// targets other than `wasm32` the macro expands to nothing, so the crate still builds and
/// tests natively. Invoke it once per crate.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::{export_strategy, Resource, Scope, Strategy};
///
/// #[derive(Default)]
/// struct Gadgets;
///
/// impl Strategy for Gadgets {
///     type Object = serde_json::Value;
///     const NAME: &'static str = "gadgets";
///     const RESOURCES: &'static [Resource] =
///         &[Resource::new("example.com", "v1", "Gadget", "gadgets", Scope::Cluster)];
/// }
///
/// export_strategy!(Gadgets);
/// ```
#[macro_export]
macro_rules! export_strategy {
    ($strategy:ty) => {
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
                $crate::export::manifest::<$strategy>()
            }

            #[no_mangle]
            extern "C" fn call(ptr: u32, len: u32) -> u64 {
                $crate::export::call::<$strategy>(ptr, len)
            }
        };
    };
}
