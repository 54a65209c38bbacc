//! Strategy Host's registry layer: one generic store per served resource, driving its strategy
//! around storage, and the table of served resources, kept current from a watch on
//! CustomResourceDefinitions; the registry-level watch followers use; the built-in kinds'
//! providers.
//!
//! It depends on the storage layer and the strategy contract only: the compiler keeps it from
//! knowing the api, the wasm modules or the controllers above it.

pub use strategy_host_contract::{admission_policy, strategy, user};

pub mod admission;
pub mod aggregation;
pub mod apiservice;
pub mod apply;
pub mod builtin;
pub mod client;
mod conversion;
mod conversion_memo;
pub mod crd_lifecycle;
mod create;
pub mod definition;
mod delete;
#[cfg(test)]
mod delete_races;
pub mod error;
pub mod fieldmanager;
pub mod flowcontrol;
pub mod follow;
pub mod kinds;
pub mod labels;
pub mod list;
pub mod names;
pub mod namespace_lifecycle;
pub mod quota;
mod read;
pub mod scale;
pub mod schema;
pub mod served;
pub mod service;
pub mod store;
pub mod system_fields;
#[cfg(test)]
mod tests;
mod update;
mod write_checks;

pub use create::check_type;
pub use definition::ResourceDefinition;
pub use delete::{DeleteOptions, FOREGROUND_DELETION, ORPHAN};
pub use error::{Error, Result, Target};
pub use list::ListPage;
pub use served::{Registry, ServedResource};
pub use store::{FieldValidation, Outcome, RegistryStore, RequestScope};
/// What a write or delete requires of the object it changes (its uid, its resourceVersion).
pub use strategy_host_storage::Preconditions;
pub use update::UpdateFn;
