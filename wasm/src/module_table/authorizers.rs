//! The slots of authorizer modules: like a policy module, an authorizer serves no resource but
//! a slot named after it, so its versions swap, shadow and canary as a strategy's do; the
//! authorizer chain finds the one its configuration names here.

use std::sync::Arc;

use super::{Key, ModuleTable};
use crate::authorizer::{AuthorizerModule, AuthorizerModules};
use crate::slot::SlotStrategy;

/// The kind part of an authorizer's slot key: a `/` no real kind has, then its name.
pub(super) const AUTHORIZER_KEY_PREFIX: &str = "authorizer/";

/// The slot of the authorizer module named `name`.
pub(super) fn authorizer_key(name: &str) -> Key {
    (String::new(), format!("{AUTHORIZER_KEY_PREFIX}{name}"))
}

impl AuthorizerModules for ModuleTable {
    /// The slot of the authorizer `name`, once a version of it is in force or staged (a staged
    /// shadow with nothing in force runs beside "no opinion").
    fn authorizer(&self, name: &str) -> Option<Arc<dyn AuthorizerModule>> {
        let slot = self
            .slots
            .read()
            .expect("slots")
            .get(&authorizer_key(name))?
            .clone();
        let loaded = slot.current.load().is_some() || slot.staged.load().is_some();
        loaded.then(|| Arc::new(SlotStrategy::new(slot)) as Arc<dyn AuthorizerModule>)
    }
}
