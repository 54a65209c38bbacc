//! A test program: `strategy-machinedeployment-conversion` with a bug — on the way to v1beta1 it
//! drops the machine template's Kubernetes `version` — so a round trip loses it and the host
//! must refuse to swap this version in.

use serde_json::Value;
use strategy_guest_sdk::{conversion, strategy, Context, Resource, Strategy};
use strategy_machinedeployment_conversion::MachineDeployments;

/// The lossy conversion.
#[derive(Default)]
pub struct Lossy;

#[strategy]
impl Strategy for Lossy {
    type Object = Value;
    const NAME: &'static str = "machinedeployment-conversion";
    const RESOURCES: &'static [Resource] = MachineDeployments::RESOURCES;

    fn convert(&self, ctx: &Context, obj: Value, desired: &str) -> Result<Value, String> {
        let mut converted = conversion::convert(&MachineDeployments, ctx, obj, desired)?;
        if desired.ends_with("/v1beta1") {
            if let Some(machine) = converted
                .pointer_mut("/spec/template/spec")
                .and_then(Value::as_object_mut)
            {
                machine.remove("version");
            }
        }
        Ok(converted)
    }
}
