//! Where modules come from: the binary itself ([`builtin_modules`]), a watched directory ([`DirectoryWatcher`]), `StrategyModule` API
//! objects ([`module_object`], followed by [`object_source`]), and the resources modules
//! declare ([`declared_resources`]). Every source feeds the module table through
//! `ModuleTable::load` and `ModuleTable::unload`.

pub mod builtin_modules;
pub mod declared_resources;
mod directory;
pub mod module_object;
pub mod object_source;
pub mod pull;

pub use directory::{source_name, DirectoryWatcher};
