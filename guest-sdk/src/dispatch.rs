//! Runs a `Strategy` on one encoded request: decode, call the trait, encode the answer.

use std::any::{Any, TypeId};
use std::sync::Arc;

use prost::Message;
use serde::{de::DeserializeOwned, Serialize};

use crate::abi::{self, request::Operation as Op};
use crate::context::Context;
use crate::field::FieldError;
use crate::lazy::LazyObject;
use crate::strategy::Strategy;

/// Answers one encoded [`abi::Request`] with an encoded [`abi::Response`]: what the exported
/// `call` entry point does, callable natively to test a strategy through the ABI.
///
/// # Examples
///
/// ```
/// use prost::Message;
/// use strategy_guest_sdk::{abi, handle, Resource, Scope, Strategy};
///
/// struct Nop;
/// impl Strategy for Nop {
///     type Object = serde_json::Value;
///     const NAME: &'static str = "nop";
///     const RESOURCES: &'static [Resource] = &[Resource::new("g", "v1", "K", "ks", Scope::Cluster)];
/// }
///
/// let req = abi::Request {
///     context: None,
///     operation: Some(abi::request::Operation::Validate(abi::ValidateRequest { object: b"{}".to_vec() })),
/// };
/// let resp = abi::Response::decode(handle(&Nop, &req.encode_to_vec()).as_slice()).unwrap();
/// assert!(resp.error.is_empty() && resp.field_errors.is_empty());
/// ```
pub fn handle<S: Strategy>(strategy: &S, request: &[u8]) -> Vec<u8> {
    let response = match abi::Request::decode(request) {
        Ok(req) => {
            let ctx = Context::from_abi(req.context);
            match req.operation {
                Some(op) => run(strategy, &ctx, op).unwrap_or_else(|error| abi::Response {
                    error,
                    ..Default::default()
                }),
                None => failure("the request names no operation"),
            }
        }
        Err(e) => failure(&format!("the request did not decode: {e}")),
    };
    response.encode_to_vec()
}

/// The encoded [`abi::Manifest`] of a strategy: what the exported `manifest` function returns,
/// naming the ABI version this SDK speaks ([`crate::ABI_VERSION`].[`crate::ABI_MINOR_VERSION`]),
/// built from the trait's constants: [`Strategy::NAME`], [`Strategy::RESOURCES`],
/// [`Strategy::OPERATIONS`], [`Strategy::HOST_FUNCTIONS`] (plus `log`, always granted) and
/// [`Strategy::APPLIES`], the resources its After hooks may apply.
///
/// # Examples
///
/// ```
/// use prost::Message;
/// use strategy_guest_sdk::{abi, manifest, GroupKind, HostFunction, Operation, Resource, Scope, Strategy};
///
/// struct Nop;
/// impl Strategy for Nop {
///     type Object = serde_json::Value;
///     const NAME: &'static str = "nop";
///     const RESOURCES: &'static [Resource] = &[Resource::new("g", "v1", "K", "ks", Scope::Cluster)];
/// }
///
/// let m = abi::Manifest::decode(manifest::<Nop>().as_slice()).unwrap();
/// assert_eq!((m.abi_version, m.abi_minor_version, m.name.as_str()), (1, 5, "nop"));
/// assert!(m.applies.is_empty());
///
/// // A module whose hook applies a Quota declares it, beside the `apply` grant.
/// struct Projects;
/// impl Strategy for Projects {
///     type Object = serde_json::Value;
///     const NAME: &'static str = "projects";
///     const RESOURCES: &'static [Resource] =
///         &[Resource::new("example.com", "v1", "Project", "projects", Scope::Cluster)];
///     const OPERATIONS: &'static [Operation] = &[Operation::AfterCreate];
///     const HOST_FUNCTIONS: &'static [HostFunction] = &[HostFunction::Apply];
///     const APPLIES: &'static [GroupKind] = &[GroupKind::new("example.com", "Quota")];
/// }
///
/// let m = abi::Manifest::decode(manifest::<Projects>().as_slice()).unwrap();
/// assert_eq!(m.applies, [abi::GroupKind { group: "example.com".into(), kind: "Quota".into() }]);
/// ```
pub fn manifest<S: Strategy>() -> Vec<u8> {
    let mut host_functions = vec![abi::HostFunction::Log as i32];
    host_functions.extend(S::HOST_FUNCTIONS.iter().map(|f| f.to_abi() as i32));
    host_functions.dedup();
    abi::Manifest {
        abi_version: crate::ABI_VERSION,
        abi_minor_version: crate::ABI_MINOR_VERSION,
        name: S::NAME.into(),
        resources: S::RESOURCES.iter().map(|r| r.to_abi()).collect(),
        operations: S::OPERATIONS.iter().map(|o| o.to_abi() as i32).collect(),
        host_functions,
        applies: S::APPLIES.iter().map(|gk| gk.to_abi()).collect(),
        admission_policy: None,
        authorizer: None,
    }
    .encode_to_vec()
}

pub(crate) fn failure(reason: &str) -> abi::Response {
    abi::Response {
        error: reason.to_owned(),
        ..Default::default()
    }
}

/// The host's JSON text of `what` as `T`: a [`LazyObject`] is only scanned for its members (the
/// host encoded the text itself), anything else parsed whole.
pub(crate) fn decode<T: DeserializeOwned + 'static>(what: &str, bytes: &[u8]) -> Result<T, String> {
    if TypeId::of::<T>() == TypeId::of::<LazyObject>() {
        let lazy = LazyObject::from_json(Arc::from(bytes))
            .map_err(|e| format!("the {what} did not decode: {e}"))?;
        let lazy: Box<dyn Any> = Box::new(lazy);
        return Ok(*lazy.downcast::<T>().expect("T is LazyObject"));
    }
    serde_json::from_slice(bytes).map_err(|e| format!("the {what} did not decode: {e}"))
}

pub(crate) fn encode<T: Serialize>(obj: &T) -> Result<Vec<u8>, String> {
    serde_json::to_vec(obj).map_err(|e| format!("the object did not encode: {e}"))
}

/// How a module answers with a changed object, as the exported `call` does: a [`LazyObject`]
/// as its JSON Patch in `object_patch` (ABI 1.4), any other type whole in `object`. Public so a
/// strategy run natively (without the ABI) answers the same.
///
/// # Errors
/// The object or its changes do not encode.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::{answer_object, LazyObject};
///
/// let mut lazy: LazyObject = serde_json::from_str(r#"{"spec":{}}"#).unwrap();
/// lazy.object_mut(&["spec"]).unwrap().insert("replicas", 1);
/// let resp = answer_object(&lazy).unwrap();
/// assert!(resp.object.is_empty());
/// assert_eq!(resp.object_patch, br#"[{"op":"add","path":"/spec/replicas","value":1}]"#);
/// assert_eq!(answer_object(&serde_json::json!({"a": 1})).unwrap().object, br#"{"a":1}"#);
/// ```
pub fn answer_object<T: Serialize + 'static>(obj: &T) -> Result<abi::Response, String> {
    let mut resp = abi::Response::default();
    answer(&mut resp, obj)?;
    Ok(resp)
}

/// Puts a changed object in `resp` (see [`answer_object`]).
fn answer<T: Serialize + 'static>(resp: &mut abi::Response, obj: &T) -> Result<(), String> {
    match (obj as &dyn Any).downcast_ref::<LazyObject>() {
        Some(lazy) => {
            resp.object_patch = lazy
                .json_patch()
                .map_err(|e| format!("the object's changes did not encode: {e}"))?
        }
        None => resp.object = encode(obj)?,
    }
    Ok(())
}

pub(crate) fn errors(errs: Vec<FieldError>) -> Vec<abi::FieldError> {
    errs.iter().map(FieldError::to_abi).collect()
}

fn run<S: Strategy>(s: &S, ctx: &Context, op: Op) -> Result<abi::Response, String> {
    let mut resp = abi::Response::default();
    match op {
        Op::PrepareForCreate(r) => {
            let mut obj = decode("object", &r.object)?;
            s.prepare_for_create(ctx, &mut obj);
            answer(&mut resp, &obj)?;
        }
        Op::Validate(r) => {
            resp.field_errors = errors(s.validate(ctx, &decode("object", &r.object)?))
        }
        Op::WarningsOnCreate(r) => {
            resp.warnings = s.warnings_on_create(ctx, &decode("object", &r.object)?)
        }
        Op::Canonicalize(r) => {
            let mut obj = decode("object", &r.object)?;
            s.canonicalize(ctx, &mut obj);
            answer(&mut resp, &obj)?;
        }
        Op::PrepareForUpdate(r) => {
            let mut obj = decode("object", &r.object)?;
            s.prepare_for_update(ctx, &mut obj, &decode("old object", &r.old_object)?);
            answer(&mut resp, &obj)?;
        }
        Op::ValidateUpdate(r) => {
            let (new, old) = (
                decode("object", &r.object)?,
                decode("old object", &r.old_object)?,
            );
            resp.field_errors = errors(s.validate_update(ctx, &new, &old));
        }
        Op::WarningsOnUpdate(r) => {
            let (new, old) = (
                decode("object", &r.object)?,
                decode("old object", &r.old_object)?,
            );
            resp.warnings = s.warnings_on_update(ctx, &new, &old);
        }
        Op::AllowCreateOnUpdate(_) => resp.allowed = s.allow_create_on_update(),
        Op::AllowUnconditionalUpdate(_) => resp.allowed = s.allow_unconditional_update(),
        Op::BeforeDelete(r) => {
            resp.field_errors = errors(s.before_delete(ctx, &decode("object", &r.object)?))
        }
        Op::AfterCreate(r) => s.after_create(ctx, &decode("object", &r.object)?)?,
        Op::AfterUpdate(r) => {
            let (new, old) = (
                decode("object", &r.object)?,
                decode("old object", &r.old_object)?,
            );
            s.after_update(ctx, &new, &old)?;
        }
        Op::AfterDelete(r) => s.after_delete(ctx, &decode("object", &r.object)?)?,
        Op::BeforeCreate(r) => {
            let mut obj = decode("object", &r.object)?;
            s.prepare_for_create(ctx, &mut obj);
            resp.field_errors = errors(s.validate(ctx, &obj));
            if resp.field_errors.is_empty() {
                resp.warnings = s.warnings_on_create(ctx, &obj);
                s.canonicalize(ctx, &mut obj);
            }
            answer(&mut resp, &obj)?;
        }
        Op::Admit(_) => return Err("a strategy is not an admission policy".into()),
        Op::Authorize(_) => return Err("a strategy is not an authorizer".into()),
        Op::Convert(r) => {
            for object in &r.objects {
                let desired = &r.desired_api_version;
                // About the input's size: written without growing the buffer again and again.
                let mut converted = Vec::with_capacity(object.len() + object.len() / 8);
                let written = match S::CONVERTS_LAZILY {
                    true => s
                        .convert_lazily(ctx, decode("object", object)?, desired)?
                        .write_json(&mut converted),
                    false => serde_json::to_writer(
                        &mut converted,
                        &s.convert(ctx, decode("object", object)?, desired)?,
                    ),
                };
                written.map_err(|e| format!("the object did not encode: {e}"))?;
                resp.converted_objects.push(converted);
            }
        }
        Op::BeforeUpdate(r) => {
            let mut obj = decode("object", &r.object)?;
            let old = decode("old object", &r.old_object)?;
            s.prepare_for_update(ctx, &mut obj, &old);
            resp.field_errors = errors(s.validate_update(ctx, &obj, &old));
            if resp.field_errors.is_empty() {
                resp.warnings = s.warnings_on_update(ctx, &obj, &old);
                s.canonicalize(ctx, &mut obj);
            }
            answer(&mut resp, &obj)?;
        }
    }
    Ok(resp)
}
