//! Runs an `Authorizer` on one encoded request, and builds its manifest: what
//! `export_authorizer!` exports, callable natively to test an authorizer through the ABI.

use prost::Message;

use crate::abi;
use crate::authorizer::{AuthorizerFailurePolicy, Decision};
use crate::context::Context;
use crate::dispatch::{decode, failure};
use crate::Authorizer;

/// The encoded [`abi::Manifest`] of an authorizer: its name, no resources, the `AUTHORIZE`
/// operation and its failure policy.
///
/// # Examples
///
/// ```
/// use prost::Message;
/// use strategy_guest_sdk::{abi, authorizer_manifest, AccessRequest, Authorizer, Context, Decision};
///
/// struct Nothing;
/// impl Authorizer for Nothing {
///     const NAME: &'static str = "nothing";
///     fn authorize(&self, _: &Context, _: &AccessRequest) -> Decision { Decision::NoOpinion }
/// }
///
/// let m = abi::Manifest::decode(authorizer_manifest::<Nothing>().as_slice()).unwrap();
/// assert_eq!(m.operations, [abi::Operation::Authorize as i32]);
/// assert_eq!(m.authorizer.unwrap().failure_policy, "NoOpinion");
/// ```
pub fn authorizer_manifest<A: Authorizer>() -> Vec<u8> {
    abi::Manifest {
        abi_version: crate::ABI_VERSION,
        abi_minor_version: crate::ABI_MINOR_VERSION,
        name: A::NAME.into(),
        operations: vec![abi::Operation::Authorize as i32],
        host_functions: vec![abi::HostFunction::Log as i32],
        authorizer: Some(abi::Authorizer {
            failure_policy: match A::FAILURE_POLICY {
                AuthorizerFailurePolicy::NoOpinion => "NoOpinion",
                AuthorizerFailurePolicy::Deny => "Deny",
            }
            .into(),
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

/// Answers one encoded [`abi::Request`] (an `authorize`) with an encoded [`abi::Response`]:
/// `allowed`, `denied` and `reason` from [`Authorizer::authorize`].
///
/// # Examples
///
/// ```
/// use prost::Message;
/// use strategy_guest_sdk::{abi, handle_authorizer, AccessRequest, Authorizer, Context, Decision};
///
/// struct NoMallory;
/// impl Authorizer for NoMallory {
///     const NAME: &'static str = "no-mallory";
///     fn authorize(&self, _: &Context, r: &AccessRequest) -> Decision {
///         match r.user.as_str() {
///             "mallory" => Decision::Deny("mallory is blocked".into()),
///             _ => Decision::NoOpinion,
///         }
///     }
/// }
///
/// let req = abi::Request {
///     context: None,
///     operation: Some(abi::request::Operation::Authorize(abi::AuthorizeRequest {
///         spec: br#"{"user":"mallory","nonResourceAttributes":{"path":"/healthz","verb":"get"}}"#.to_vec(),
///     })),
/// };
/// let resp = abi::Response::decode(handle_authorizer(&NoMallory, &req.encode_to_vec()).as_slice()).unwrap();
/// assert!(resp.denied && !resp.allowed);
/// assert_eq!(resp.reason, "mallory is blocked");
/// ```
pub fn handle_authorizer<A: Authorizer>(authorizer: &A, request: &[u8]) -> Vec<u8> {
    let response = match abi::Request::decode(request) {
        Ok(abi::Request {
            context,
            operation: Some(abi::request::Operation::Authorize(r)),
        }) => match decode("spec", &r.spec) {
            Ok(spec) => answer(authorizer.authorize(&Context::from_abi(context), &spec)),
            Err(e) => failure(&e),
        },
        Ok(_) => failure("an authorizer is only asked to authorize"),
        Err(e) => failure(&format!("the request did not decode: {e}")),
    };
    response.encode_to_vec()
}

fn answer(decision: Decision) -> abi::Response {
    let (allowed, denied, reason) = match decision {
        Decision::Allow(reason) => (true, false, reason),
        Decision::Deny(reason) => (false, true, reason),
        Decision::NoOpinion => (false, false, String::new()),
    };
    abi::Response {
        allowed,
        denied,
        reason,
        ..Default::default()
    }
}
