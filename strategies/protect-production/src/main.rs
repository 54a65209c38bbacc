//! The `strategy-protect-production` wasm module: the library's `ProtectProduction` authorizer,
//! exported as the entry points.
#![cfg_attr(target_arch = "wasm32", no_main)]

strategy_guest_sdk::export_authorizer!(strategy_protect_production::ProtectProduction);
