//! The `strategy-default-owner` wasm module: the library's `DefaultOwner` policy, exported as the entry points.
#![cfg_attr(target_arch = "wasm32", no_main)]

strategy_guest_sdk::export_admission_policy!(strategy_default_owner::DefaultOwner);
