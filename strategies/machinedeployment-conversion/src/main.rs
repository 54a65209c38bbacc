//! The `strategy-machinedeployment-conversion` wasm module: the library's `MachineDeployments`
//! conversion, exported as the entry points.
#![cfg_attr(target_arch = "wasm32", no_main)]

strategy_guest_sdk::export_strategy!(strategy_machinedeployment_conversion::MachineDeployments);
