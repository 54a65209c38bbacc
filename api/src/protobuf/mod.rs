//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) for built-in kinds: converts
//! between the JSON objects the server works with and kube-apiserver's protobuf wire form.
//!
//! The message types are k8s-pb's (prost code generated from Kubernetes' `.proto` files); the
//! JSON side is a bridge of our own (`bridge.rs`, `messages.rs`, `access_messages.rs`,
//! `admission_messages.rs`, `apiextensions_messages.rs`, `flowcontrol_messages.rs`,
//! `network_messages.rs`, `well_known.rs`). The kinds covered are the
//! core ones the built-in module serves, Events, Leases, `Status` and `DeleteOptions`, the
//! access-control kinds (RBAC roles and bindings, token requests and reviews, and access
//! reviews), the admission kinds (webhook configurations, validating and mutating admission
//! policies and their bindings), the service-network kinds (Services, Endpoints,
//! EndpointSlices, IPAddresses and APIServices), CustomResourceDefinitions, and API priority and
//! fairness' FlowSchemas and PriorityLevelConfigurations.
//!
//! Wire form, as in k8s.io/apimachinery `pkg/runtime/serializer/protobuf/protobuf.go` and
//! `codec_factory.go`:
//! - an object or list body is the magic `k8s\0` (`6b 38 73 00`) followed by a
//!   `runtime.Unknown { typeMeta {apiVersion, kind}, raw, contentEncoding: "", contentType: "" }`
//!   whose `raw` is the object's message;
//! - a watch stream (`;stream=watch`) is frames of a 4-byte big-endian length and a
//!   `meta.v1.WatchEvent {type, object: RawExtension {raw}}` written by the raw serializer (no
//!   magic, no `Unknown`), whose `object.raw` is the object written by the full serializer
//!   above (magic and `Unknown`), as `apiserver`'s `watchEncoder.doEncode` does and client-go's
//!   `rest/watch/decoder.go` reads.

mod access_messages;
mod admission_messages;
mod apiextensions_messages;
mod bridge;
mod error;
mod flowcontrol_messages;
mod messages;
mod network_messages;
pub mod shared;
#[cfg(test)]
mod tests;
mod well_known;

use k8s_pb::api::admissionregistration::v1 as admission;
use k8s_pb::api::admissionregistration::v1beta1 as admission_beta;
use k8s_pb::api::authentication::v1 as authentication;
use k8s_pb::api::authorization::v1 as authorization;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::discovery::v1 as discovery;
use k8s_pb::api::events::v1 as events;
use k8s_pb::api::flowcontrol::v1 as flowcontrol;
use k8s_pb::api::networking::v1 as networking;
use k8s_pb::api::rbac::v1 as rbac;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta, Unknown};
use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use prost::Message;
use serde_json::Value;

use bridge::JsonValue;
pub use error::ProtobufError;

/// The media type of Kubernetes protobuf.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The bytes every protobuf object body starts with: `k8s` and encoding 0 (`runtime.Unknown`).
const MAGIC: [u8; 4] = [0x6b, 0x38, 0x73, 0x00];

/// How one (apiVersion, kind) converts: its message type's two directions, and for a list the
/// kind of its items (stamped on them when decoding, as the server's JSON lists carry it).
#[derive(Clone, Copy)]
struct KindCodec {
    /// The object's JSON (apiVersion and kind ignored) as the message's protobuf encoding.
    to_proto: fn(&Value) -> Result<Vec<u8>, ProtobufError>,
    /// The message's protobuf encoding as JSON, without apiVersion and kind.
    from_proto: fn(&[u8], &str) -> Result<Value, ProtobufError>,
    /// For a list kind, the kind of its items.
    item_kind: Option<&'static str>,
    /// Test support: the paths of the fields the object's message leaves unset.
    #[cfg(test)]
    unset_fields: fn(&Value) -> Vec<String>,
}

impl KindCodec {
    /// A kind whose message is `M`.
    fn object<M: Message + Default + JsonValue>() -> Self {
        Self {
            to_proto: |json| Ok(M::from_json(json)?.encode_to_vec()),
            from_proto: |bytes, what| message_json::<M>(bytes, what),
            item_kind: None,
            #[cfg(test)]
            unset_fields: |json| {
                let mut unset = Vec::new();
                M::from_json(json)
                    .expect("a valid fixture")
                    .unset_fields("", &mut unset);
                unset
            },
        }
    }

    /// A stored kind `item_kind` whose message is `M` (`list`: false), or its list, whose
    /// message is `L`.
    fn stored<M, L>(list: bool, item_kind: &'static str) -> Self
    where
        M: Message + Default + JsonValue,
        L: Message + Default + JsonValue,
    {
        if list {
            Self::list::<L>(item_kind)
        } else {
            Self::object::<M>()
        }
    }

    /// A list kind whose message is `M` and whose items are `item_kind`.
    fn list<M: Message + Default + JsonValue>(item_kind: &'static str) -> Self {
        Self {
            item_kind: Some(item_kind),
            ..Self::object::<M>()
        }
    }
}

/// Decodes `bytes` as message `M` (`what` names it in errors) and answers its JSON.
fn message_json<M: Message + Default + JsonValue>(
    bytes: &[u8],
    what: &str,
) -> Result<Value, ProtobufError> {
    M::decode(bytes)
        .map_err(|e| ProtobufError::Malformed {
            what: what.to_owned(),
            message: e.to_string(),
        })?
        .to_json()
}

/// The codec of an (apiVersion, kind) that has a protobuf form, or `None`.
fn codec(api_version: &str, kind: &str) -> Option<KindCodec> {
    match kind.strip_suffix("List") {
        Some(item) => stored(api_version, item, true),
        None => stored(api_version, kind, false).or_else(|| unstored(api_version, kind)),
    }
}

/// The codec of a kind the server stores (`list`: false) or of its list (`{Kind}List`).
fn stored(api_version: &str, kind: &str, list: bool) -> Option<KindCodec> {
    /// Rows `apiVersion => module::{Kind, KindList}`: a kind's message and its list's.
    macro_rules! stored_kinds {
        ($($version:pat => $module:ident::{$message:ident, $list:ident};)*) => {
            match (api_version, kind) {
                $(($version, stringify!($message)) => KindCodec::stored::<
                    $module::$message,
                    $module::$list,
                >(list, stringify!($message)),)*
                _ => return None,
            }
        };
    }
    Some(stored_kinds! {
        "v1" => core::{Namespace, NamespaceList};
        "v1" => core::{ConfigMap, ConfigMapList};
        "v1" => core::{Secret, SecretList};
        "v1" => core::{ResourceQuota, ResourceQuotaList};
        "v1" => core::{ServiceAccount, ServiceAccountList};
        "v1" => core::{Event, EventList};
        "v1" => core::{Service, ServiceList};
        "v1" => core::{Endpoints, EndpointsList};
        "discovery.k8s.io/v1" => discovery::{EndpointSlice, EndpointSliceList};
        "networking.k8s.io/v1" => networking::{IPAddress, IPAddressList};
        "apiregistration.k8s.io/v1" => apiregistration::{APIService, APIServiceList};
        "flowcontrol.apiserver.k8s.io/v1" => flowcontrol::{FlowSchema, FlowSchemaList};
        "flowcontrol.apiserver.k8s.io/v1" => flowcontrol::{
            PriorityLevelConfiguration, PriorityLevelConfigurationList
        };
        "apiextensions.k8s.io/v1" => apiextensions::{
            CustomResourceDefinition, CustomResourceDefinitionList
        };
        "events.k8s.io/v1" => events::{Event, EventList};
        "coordination.k8s.io/v1" => coordination::{Lease, LeaseList};
        "rbac.authorization.k8s.io/v1" => rbac::{Role, RoleList};
        "rbac.authorization.k8s.io/v1" => rbac::{ClusterRole, ClusterRoleList};
        "rbac.authorization.k8s.io/v1" => rbac::{RoleBinding, RoleBindingList};
        "rbac.authorization.k8s.io/v1" => rbac::{ClusterRoleBinding, ClusterRoleBindingList};
        ADMISSION_V1 => admission::{
            ValidatingWebhookConfiguration, ValidatingWebhookConfigurationList
        };
        ADMISSION_V1 => admission::{MutatingWebhookConfiguration, MutatingWebhookConfigurationList};
        ADMISSION_V1 => admission::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyList};
        ADMISSION_V1 => admission::{
            ValidatingAdmissionPolicyBinding, ValidatingAdmissionPolicyBindingList
        };
        // v1 (Kubernetes 1.36) has v1beta1's fields and field numbers; k8s-pb 0.9 generates
        // only v1beta1's messages, which therefore carry both.
        ADMISSION_V1 | ADMISSION_V1BETA1 => admission_beta::{
            MutatingAdmissionPolicy, MutatingAdmissionPolicyList
        };
        ADMISSION_V1 | ADMISSION_V1BETA1 => admission_beta::{
            MutatingAdmissionPolicyBinding, MutatingAdmissionPolicyBindingList
        };
    })
}

const ADMISSION_V1: &str = "admissionregistration.k8s.io/v1";
const ADMISSION_V1BETA1: &str = "admissionregistration.k8s.io/v1beta1";

/// The codec of a kind without a list: a create-only kind, `Status` or `DeleteOptions`.
fn unstored(api_version: &str, kind: &str) -> Option<KindCodec> {
    /// Rows `apiVersion => module::Kind` of kinds whose message is their codec's only one.
    macro_rules! unlisted_kinds {
        ($($version:pat => $module:ident::$message:ident;)*) => {
            match (api_version, kind) {
                $(($version, stringify!($message)) => KindCodec::object::<$module::$message>(),)*
                // DeleteOptions is registered in every group version (a DELETE body names the
                // resource's own apiVersion) and in meta.k8s.io/v1.
                (_, "DeleteOptions") => KindCodec::object::<meta::DeleteOptions>(),
                _ => return None,
            }
        };
    }
    Some(unlisted_kinds! {
        // Create-only kinds: the body of a POST and its answer, never stored or listed.
        "authentication.k8s.io/v1" => authentication::TokenRequest;
        "authentication.k8s.io/v1" => authentication::TokenReview;
        "authentication.k8s.io/v1" => authentication::SelfSubjectReview;
        "authorization.k8s.io/v1" => authorization::SubjectAccessReview;
        "authorization.k8s.io/v1" => authorization::LocalSubjectAccessReview;
        "authorization.k8s.io/v1" => authorization::SelfSubjectAccessReview;
        "authorization.k8s.io/v1" => authorization::SelfSubjectRulesReview;
        // Status is an unversioned type Kubernetes registers as group "", version "v1".
        "v1" => meta::Status;
    })
}

/// Whether objects of `api_version` and `kind` have a protobuf form here; the caller answers
/// JSON for those that do not.
pub fn supports(api_version: &str, kind: &str) -> bool {
    codec(api_version, kind).is_some()
}

/// The `apiVersion` and `kind` of a JSON object, when it is an object with both.
fn type_of(obj: &Value) -> Option<(&str, &str)> {
    Some((obj.get("apiVersion")?.as_str()?, obj.get("kind")?.as_str()?))
}

/// Encodes a JSON object (with `apiVersion` and `kind`) as a protobuf body: the magic and a
/// `runtime.Unknown` holding the object's message.
///
/// Answers `Ok(None)` when the object's apiVersion and kind have no protobuf form (the caller
/// answers JSON instead). JSON fields the message does not have are not encoded.
///
/// # Errors
///
/// A field of the object has the wrong JSON type or an invalid value (the error names its path).
pub fn encode(obj: &Value) -> Result<Option<Vec<u8>>, ProtobufError> {
    let Some((api_version, kind)) = type_of(obj) else {
        return Ok(None);
    };
    let Some(codec) = codec(api_version, kind) else {
        return Ok(None);
    };
    Ok(Some(envelope(api_version, kind, (codec.to_proto)(obj)?)))
}

/// The body of an object of this apiVersion and kind: the magic, then `runtime.Unknown` holding
/// the message's bytes `raw`.
fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
        }),
        raw: Some(raw),
        // Written empty, as kube-apiserver does (`Unknown.NestedMarshalTo`).
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = Vec::with_capacity(MAGIC.len() + unknown.encoded_len());
    body.extend_from_slice(&MAGIC);
    unknown
        .encode(&mut body)
        .expect("a Vec grows to hold any message");
    body
}

/// Decodes a protobuf body (magic, `runtime.Unknown`) into the JSON object it holds, with
/// `apiVersion` and `kind` from the envelope (and, for a list, on each item).
///
/// # Errors
///
/// The body has no magic or is not valid protobuf ([`ProtobufError::NotProtobuf`],
/// [`ProtobufError::Malformed`]); the envelope names a kind without a protobuf form here
/// ([`ProtobufError::Unsupported`]); or a value cannot be shown in JSON (a timestamp out of
/// range, managed fields that are not JSON: [`ProtobufError::Field`]).
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let unknown = match body.strip_prefix(&MAGIC) {
        Some([]) => {
            return Err(ProtobufError::NotProtobuf(
                "the body is only the magic".into(),
            ))
        }
        Some(rest) => Unknown::decode(rest).map_err(|e| ProtobufError::Malformed {
            what: "the runtime.Unknown envelope".into(),
            message: e.to_string(),
        })?,
        None if body.is_empty() => {
            return Err(ProtobufError::NotProtobuf("the body is empty".into()))
        }
        None => {
            return Err(ProtobufError::NotProtobuf(format!(
                "it does not start with the magic bytes 6b 38 73 00 (\"k8s\\0\"), but {:02x?}",
                &body[..body.len().min(4)]
            )))
        }
    };
    let Unknown {
        type_meta,
        raw,
        content_encoding,
        // The type of `raw` is implied by the magic; Kubernetes ignores this too.
        content_type: _,
    } = unknown;
    if let Some(encoding) = content_encoding.filter(|e| !e.is_empty()) {
        return Err(ProtobufError::NotProtobuf(format!(
            "content encoding {encoding:?} is not supported"
        )));
    }
    let TypeMeta { api_version, kind } = type_meta.unwrap_or_default();
    let (api_version, kind) = (api_version.unwrap_or_default(), kind.unwrap_or_default());
    if api_version.is_empty() || kind.is_empty() {
        return Err(ProtobufError::NotProtobuf(
            "the envelope names no apiVersion or kind".into(),
        ));
    }
    let Some(codec) = codec(&api_version, &kind) else {
        return Err(ProtobufError::Unsupported { api_version, kind });
    };
    let what = format!("{api_version} {kind}");
    let mut json = (codec.from_proto)(raw.as_deref().unwrap_or_default(), &what)?;
    if let Some(item_kind) = codec.item_kind {
        if let Some(Value::Array(items)) = json.get_mut("items") {
            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                item.insert("apiVersion".into(), Value::String(api_version.clone()));
                item.insert("kind".into(), Value::String(item_kind.into()));
            }
        }
    }
    json["apiVersion"] = Value::String(api_version);
    json["kind"] = Value::String(kind);
    Ok(json)
}

/// One frame of a protobuf watch stream: a 4-byte big-endian length, then a `meta.v1.WatchEvent`
/// (no magic, no envelope) whose `object.raw` is `obj` encoded as [`encode`] does.
///
/// `event_type` is `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR` (with a `Status`).
/// Answers `Ok(None)` when the object has no protobuf form.
///
/// # Errors
///
/// As [`encode`]; or the frame would exceed the 4 GiB a length prefix can say.
pub fn encode_watch_frame(event_type: &str, obj: &Value) -> Result<Option<Vec<u8>>, ProtobufError> {
    let Some(object) = encode(obj)? else {
        return Ok(None);
    };
    let event = meta::WatchEvent {
        r#type: Some(event_type.to_owned()),
        object: Some(RawExtension { raw: Some(object) }),
    };
    let len = event.encoded_len();
    let prefix = u32::try_from(len)
        .map_err(|_| ProtobufError::invalid(format!("a watch event of {len} bytes is too big")))?;
    let mut frame = Vec::with_capacity(4 + len);
    frame.extend_from_slice(&prefix.to_be_bytes());
    event
        .encode(&mut frame)
        .expect("a Vec grows to hold any message");
    Ok(Some(frame))
}

/// Reads one watch frame written by [`encode_watch_frame`] (or kube-apiserver): the event type
/// and the object's JSON.
///
/// # Errors
///
/// The length prefix does not match the frame, or the event or its object cannot be decoded.
#[cfg(test)]
pub fn decode_watch_frame(frame: &[u8]) -> Result<(String, Value), ProtobufError> {
    let (prefix, event) = frame.split_first_chunk::<4>().ok_or_else(|| {
        ProtobufError::NotProtobuf("a watch frame is shorter than 4 bytes".into())
    })?;
    let len = u32::from_be_bytes(*prefix) as usize;
    if len != event.len() {
        return Err(ProtobufError::NotProtobuf(format!(
            "the watch frame's length prefix says {len} bytes, {} follow",
            event.len()
        )));
    }
    let meta::WatchEvent { r#type, object } =
        meta::WatchEvent::decode(event).map_err(|e| ProtobufError::Malformed {
            what: "meta.v1.WatchEvent".into(),
            message: e.to_string(),
        })?;
    let raw = object.and_then(|o| o.raw).unwrap_or_default();
    Ok((r#type.unwrap_or_default(), decode(&raw)?))
}
