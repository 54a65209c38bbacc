//! The `strategy-owner-label` wasm module: the library's `OwnerLabel` policy, exported as the entry points.
#![cfg_attr(target_arch = "wasm32", no_main)]

strategy_guest_sdk::export_admission_policy!(strategy_owner_label::OwnerLabel);
