//! The `strategy-deployment` wasm module: the library's `Deployments`, exported as the entry points.
#![cfg_attr(target_arch = "wasm32", no_main)]

strategy_guest_sdk::export_strategy!(strategy_deployment::Deployments);
