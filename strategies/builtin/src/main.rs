//! The `strategy-builtin` wasm module: the library's `BuiltinKinds`, exported as the entry points.
#![cfg_attr(target_arch = "wasm32", no_main)]

strategy_guest_sdk::export_strategy!(strategy_builtin::BuiltinKinds);
