//! Runs an `AdmissionPolicy` on one encoded request, and builds its manifest: what
//! `export_admission_policy!` exports, callable natively to test a policy through the ABI.

use prost::Message;

use crate::abi;
use crate::context::Context;
use crate::dispatch::{decode, encode, errors, failure};
use crate::policy::{AdmissionOperation, AdmissionPolicy, AdmissionRequest, FailurePolicy};

/// The encoded [`abi::Manifest`] of an admission policy: its name, no resources, and its
/// declaration ([`AdmissionPolicy::MATCH`], conditions, actions, failure policy); it implements
/// `ADMIT_VALIDATE`, and `ADMIT_MUTATE` when it [`AdmissionPolicy::MUTATES`].
///
/// # Examples
///
/// ```
/// use prost::Message;
/// use strategy_guest_sdk::{abi, policy_manifest, AdmissionPolicy, MatchResources, Rule};
///
/// struct Audit;
/// impl AdmissionPolicy for Audit {
///     type Object = serde_json::Value;
///     const NAME: &'static str = "audit";
///     const MATCH: MatchResources = MatchResources::rules(&[Rule::new(&["*"], &["*"], &["*"], &["*"])]);
/// }
///
/// let m = abi::Manifest::decode(policy_manifest::<Audit>().as_slice()).unwrap();
/// assert!(m.resources.is_empty());
/// assert_eq!(m.admission_policy.unwrap().validation_actions, ["Deny"]);
/// assert_eq!(m.operations, [abi::Operation::AdmitValidate as i32]);
/// ```
pub fn policy_manifest<P: AdmissionPolicy>() -> Vec<u8> {
    let mut operations = vec![abi::Operation::AdmitValidate as i32];
    if P::MUTATES {
        operations.insert(0, abi::Operation::AdmitMutate as i32);
    }
    abi::Manifest {
        abi_version: crate::ABI_VERSION,
        abi_minor_version: crate::ABI_MINOR_VERSION,
        name: P::NAME.into(),
        resources: Vec::new(),
        operations,
        host_functions: vec![abi::HostFunction::Log as i32],
        applies: Vec::new(),
        admission_policy: Some(abi::AdmissionPolicy {
            match_resources: P::MATCH.to_json().to_string().into_bytes(),
            match_conditions: P::MATCH_CONDITIONS
                .iter()
                .map(|c| abi::MatchCondition {
                    name: c.name.into(),
                    expression: c.expression.into(),
                })
                .collect(),
            validation_actions: P::ACTIONS.iter().map(|a| a.as_str().into()).collect(),
            failure_policy: match P::FAILURE_POLICY {
                FailurePolicy::Fail => "Fail",
                FailurePolicy::Ignore => "Ignore",
            }
            .into(),
        }),
        authorizer: None,
    }
    .encode_to_vec()
}

/// Answers one encoded [`abi::Request`] (an `admit`) for a policy with an encoded
/// [`abi::Response`]: in the mutating phase the object after [`AdmissionPolicy::mutate`], in the
/// validating phase the field errors of [`AdmissionPolicy::validate`] and, when it admits, the
/// warnings.
///
/// # Examples
///
/// ```
/// use prost::Message;
/// use serde_json::Value;
/// use strategy_guest_sdk::{abi, handle_policy, AdmissionPolicy, AdmissionRequest, Context, FieldError, FieldPath, MatchResources, Rule};
///
/// struct Named;
/// impl AdmissionPolicy for Named {
///     type Object = Value;
///     const NAME: &'static str = "named";
///     const MATCH: MatchResources = MatchResources::rules(&[Rule::new(&["*"], &["*"], &["*"], &["*"])]);
///     fn validate(&self, _: &Context, r: &AdmissionRequest<Value>) -> Vec<FieldError> {
///         match r.name.starts_with("team-") {
///             true => vec![],
///             false => vec![FieldError::invalid(&FieldPath::new("metadata").child("name"), r.name.as_str(), "must start with team-")],
///         }
///     }
/// }
///
/// let req = abi::Request {
///     context: None,
///     operation: Some(abi::request::Operation::Admit(abi::AdmitRequest {
///         phase: abi::AdmissionPhase::Validate as i32,
///         operation: "CREATE".into(),
///         object: br#"{"metadata":{"name":"x"}}"#.to_vec(),
///         name: "x".into(),
///         ..Default::default()
///     })),
/// };
/// let resp = abi::Response::decode(handle_policy(&Named, &req.encode_to_vec()).as_slice()).unwrap();
/// assert_eq!(resp.field_errors[0].field, "metadata.name");
/// ```
pub fn handle_policy<P: AdmissionPolicy>(policy: &P, request: &[u8]) -> Vec<u8> {
    let response = match abi::Request::decode(request) {
        Ok(abi::Request {
            context,
            operation: Some(abi::request::Operation::Admit(admit)),
        }) => run(policy, &Context::from_abi(context), admit).unwrap_or_else(|e| failure(&e)),
        Ok(_) => failure("an admission policy is only asked to admit"),
        Err(e) => failure(&format!("the request did not decode: {e}")),
    };
    response.encode_to_vec()
}

fn object<T: serde::de::DeserializeOwned + 'static>(
    what: &str,
    bytes: &[u8],
) -> Result<Option<T>, String> {
    match bytes.is_empty() {
        true => Ok(None),
        false => decode(what, bytes).map(Some),
    }
}

fn run<P: AdmissionPolicy>(
    p: &P,
    ctx: &Context,
    admit: abi::AdmitRequest,
) -> Result<abi::Response, String> {
    let operation = match admit.operation.as_str() {
        "CREATE" => AdmissionOperation::Create,
        "UPDATE" => AdmissionOperation::Update,
        "DELETE" => AdmissionOperation::Delete,
        other => return Err(format!("unknown admission operation {other:?}")),
    };
    let phase = admit.phase();
    let mut request = AdmissionRequest {
        operation,
        namespace: admit.namespace,
        name: admit.name,
        subresource: admit.subresource,
        object: object("object", &admit.object)?,
        old_object: object("old object", &admit.old_object)?,
    };
    let mut resp = abi::Response::default();
    match phase {
        abi::AdmissionPhase::Mutate => {
            p.mutate(ctx, &mut request);
            if let Some(obj) = &request.object {
                resp.object = encode(obj)?;
            }
        }
        abi::AdmissionPhase::Validate => {
            resp.field_errors = errors(p.validate(ctx, &request));
            if resp.field_errors.is_empty() {
                resp.warnings = p.warnings(ctx, &request);
            }
        }
        abi::AdmissionPhase::Unspecified => return Err("the request names no phase".into()),
    }
    Ok(resp)
}
