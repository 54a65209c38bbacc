//! The check a module that converts versions passes before it is swapped in (Kubernetes leaves
//! this to the webhook's author; a module can be tried first): its conversion round-trips a
//! sample of the stored objects of each resource it converts, through every other served
//! version, back to what is stored — so a lossy conversion never serves.

use std::sync::Arc;

use serde_json::Value;

use super::{ConversionFailure, ModuleTable, Refusal};
use crate::strategy::ResourceInfo;
use strategy_host_registry::system_fields::meta_str;
use strategy_host_wasm_runtime::abi::{self, request::Operation as Op, Operation};
use strategy_host_wasm_runtime::{CallerInfo, StrategyModule};

/// What a conversion is tried on: the `apiVersion`s the resource serves, and stored objects.
#[derive(Debug, Clone, Default)]
pub struct ConversionSample {
    /// Every served `group/version`.
    pub api_versions: Vec<String>,
    /// Some stored objects (each at the storage version).
    pub objects: Vec<Value>,
}

/// Finds the sample of a resource (`None`: nothing served or stored to try).
pub type ConversionSamples = Arc<dyn Fn(&ResourceInfo) -> Option<ConversionSample> + Send + Sync>;

/// The parts of an object a conversion must give back: all but the metadata the host restores
/// (everything in `metadata` other than labels and annotations).
fn comparable(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|k, _| k == "labels" || k == "annotations");
    }
    obj
}

impl ModuleTable {
    /// Installs where the round-trip check finds its samples (the registry's cache).
    pub fn set_conversion_samples(&self, samples: ConversionSamples) {
        *self.conversion_samples.write().expect("samples") = Some(samples);
    }

    /// Checks that `module`'s conversion round-trips the samples of every resource it converts.
    pub(super) fn check_round_trips(&self, module: &StrategyModule) -> Result<(), Refusal> {
        if !module.manifest().implements(Operation::Convert) {
            return Ok(());
        }
        let Some(samples) = self.conversion_samples.read().expect("samples").clone() else {
            return Ok(());
        };
        for resource in &module.manifest().resources {
            let Some(sample) = samples(resource) else {
                continue;
            };
            for obj in &sample.objects {
                let from = obj["apiVersion"].as_str().unwrap_or_default();
                for via in sample.api_versions.iter().filter(|v| *v != from) {
                    let there = self.convert_one(module, resource, obj, via)?;
                    let back = self.convert_one(module, resource, &there, from)?;
                    let patch = json_patch::diff(&comparable(obj), &comparable(&back));
                    if !patch.0.is_empty() {
                        let name = meta_str(obj, "name");
                        return Err(Refusal::NotRoundTrip {
                            plural: resource.plural.clone(),
                            name: name.unwrap_or_default().to_owned(),
                            from: from.to_owned(),
                            via: via.clone(),
                            patch: serde_json::to_string(&patch).unwrap_or_default(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// One object converted to `desired` by `module` (a blocking call on this thread).
    fn convert_one(
        &self,
        module: &StrategyModule,
        resource: &ResourceInfo,
        obj: &Value,
        desired: &str,
    ) -> Result<Value, Refusal> {
        let caller = CallerInfo {
            module: module.name().to_owned(),
            request_id: "conversion-check".into(),
            resource: resource.clone(),
            dry_run: true,
        };
        let request = abi::Request {
            context: None,
            operation: Some(Op::Convert(abi::ConvertRequest {
                objects: vec![serde_json::to_vec(obj).unwrap_or_default()],
                desired_api_version: desired.to_owned(),
            })),
        };
        let failed = |reason: ConversionFailure| Refusal::Conversion {
            desired: desired.to_owned(),
            reason,
        };
        let response = module
            .call(&self.runtime, caller, &request)
            .map_err(|e| failed(ConversionFailure::Call(e)))?;
        if !response.error.is_empty() {
            return Err(failed(ConversionFailure::Answered(response.error)));
        }
        let converted = response
            .converted_objects
            .first()
            .ok_or_else(|| failed(ConversionFailure::NoObject))?;
        let value: Value =
            serde_json::from_slice(converted).map_err(|e| failed(ConversionFailure::NotJson(e)))?;
        if value["apiVersion"].as_str() != Some(desired) {
            return Err(failed(ConversionFailure::OtherVersion(
                value["apiVersion"].clone(),
            )));
        }
        Ok(value)
    }
}
