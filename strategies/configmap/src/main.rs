//! The `strategy-configmap` wasm module: the library's `ConfigMaps`, exported as the entry points.
#![cfg_attr(target_arch = "wasm32", no_main)]

strategy_guest_sdk::export_strategy!(strategy_configmap::ConfigMaps);
