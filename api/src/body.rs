//! Request bodies, decoded only here: read under a size cap (→ 413), content types checked
//! (→ 415), JSON or (built-in kinds) protobuf decoded (→ 400), and the field validation rule (`fieldValidation=Strict|Warn|
//! Ignore` over duplicate fields) applied once for every body that carries an object or a patch.

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::body::Body as _;
use hyper::body::Incoming;
use serde_json::Value;

use super::json_tree::{duplicate_field, parse_with_duplicates};
use super::media::media_type;
use super::params::DeleteOptionsBody;
use super::patch::{Patch, PatchKind};
use super::status::Status;
use strategy_host_registry::FieldValidation;

/// The default request body cap: 3 MiB, as Kubernetes.
pub const DEFAULT_MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// How long the rest of an oversized body may take to arrive before the 413 is sent anyway.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads the whole body, refusing more than `max` bytes. The rest of an oversized body (up to
/// another `max` bytes, within `DRAIN_TIME`) is read and dropped before the 413 is sent, as Go's
/// server reads what a handler left unread: a client still sending it then reads the 413, where
/// closing on unread bytes would reset the connection under it (a broken pipe, no answer).
///
/// # Errors
/// 413 over the cap; 400 when the body cannot be read.
pub async fn read(mut body: Incoming, max: usize) -> Result<Bytes, Status> {
    let unreadable =
        |e: hyper::Error| Status::bad_request(format!("unable to read the request body: {e}"));
    let declared = body.size_hint().lower();
    let mut collected = bytes::BytesMut::new();
    if declared <= max as u64 {
        while let Some(frame) = body.frame().await {
            if let Some(data) = frame.map_err(unreadable)?.data_ref() {
                if collected.len() + data.len() > max {
                    let over = (collected.len() + data.len()) as u64;
                    return Err(refused(drain(body, over, max as u64).await, max));
                }
                collected.extend_from_slice(data);
            }
        }
        return Ok(collected.freeze());
    }
    Err(refused(drain(body, 0, max as u64).await, max))
}

/// The 413 for a body over `max`, ending the connection unless the body was `drained`.
fn refused(drained: bool, max: usize) -> Status {
    Status {
        closes_connection: !drained,
        ..too_large(max)
    }
}

/// Reads and drops what is left of `body` (`seen` bytes of it were read) while it stays within
/// `2 * max` bytes and `DRAIN_TIME`; whether it reached the body's end.
async fn drain(mut body: Incoming, mut seen: u64, max: u64) -> bool {
    if seen + body.size_hint().lower() > 2 * max {
        return false;
    }
    let to_end = async {
        while seen <= 2 * max {
            match body.frame().await {
                Some(Ok(frame)) => seen += frame.data_ref().map_or(0, |d| d.len() as u64),
                Some(Err(_)) => return false,
                None => return true,
            }
        }
        false
    };
    tokio::time::timeout(DRAIN_TIME, to_end)
        .await
        .unwrap_or(false)
}

/// The 413 answer.
pub fn too_large(max: usize) -> Status {
    Status::too_large(format!(
        "the request body is larger than the limit of {max} bytes"
    ))
}

/// Decodes a create or update body in its content type: JSON (or none), or Kubernetes protobuf
/// when `protobuf` (built-in kinds; custom resources are JSON only, as in Kubernetes).
///
/// # Errors
/// 415 for another content type; 400 for a body that does not decode.
pub fn decode_object_in(
    content_type: Option<&str>,
    bytes: &[u8],
    mode: FieldValidation,
    protobuf: bool,
) -> Result<(Value, Vec<String>), Status> {
    match media_type(content_type).as_str() {
        "" | "application/json" | "*/*" => decode_object(bytes, mode),
        super::protobuf::PROTOBUF if protobuf => super::protobuf::decode(bytes)
            .map(|obj| (obj, Vec::new()))
            .map_err(|e| Status::bad_request(format!("error decoding the protobuf body: {e}"))),
        other => {
            let accepted = if protobuf {
                "application/json, application/vnd.kubernetes.protobuf"
            } else {
                "application/json"
            };
            Err(Status::unsupported_media_type(format!(
                "the body of the request was in an unknown format ({other}) - accepted media types include: {accepted}"
            )))
        }
    }
}

/// Parses a JSON object, with the paths of the fields it repeats.
fn parse_object(bytes: &[u8]) -> Result<(Value, Vec<String>), Status> {
    let (value, repeated) = parse_with_duplicates(bytes).map_err(|e| {
        Status::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })?;
    if !value.is_object() {
        return Err(Status::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok((value, repeated))
}

/// [`FieldValidation::judge`] over the problems a decoder found in a body, as a 400 `Status`.
///
/// # Errors
/// 400 under `Strict` when there is any problem.
pub fn field_validation(
    problems: Vec<String>,
    mode: FieldValidation,
) -> Result<Vec<String>, Status> {
    mode.judge(problems)
        .map_err(|e| Status::bad_request(e.to_string()))
}

/// The problems of a body that repeats the fields at `repeated`, under the field validation mode.
fn check_duplicates(repeated: Vec<String>, mode: FieldValidation) -> Result<Vec<String>, Status> {
    let problems = repeated.iter().map(|d| duplicate_field(d)).collect();
    field_validation(problems, mode)
}

/// Decodes a create or update body: a JSON object; duplicate fields per `mode`.
///
/// # Errors
/// 400 for malformed JSON, a body that is not an object, or duplicates under `Strict`.
pub fn decode_object(bytes: &[u8], mode: FieldValidation) -> Result<(Value, Vec<String>), Status> {
    let (obj, repeated) = parse_object(bytes)?;
    let warnings = check_duplicates(repeated, mode)?;
    Ok((obj, warnings))
}

/// Decodes a patch body of `kind`; duplicate fields per `mode` (an apply configuration in
/// YAML is not checked for them).
///
/// # Errors
/// 400 for a malformed patch or duplicates under `Strict`.
pub fn decode_patch(
    kind: PatchKind,
    bytes: &[u8],
    mode: FieldValidation,
) -> Result<(Patch, Vec<String>), Status> {
    let (patch, problems) = Patch::decode(kind, bytes)?;
    Ok((patch, field_validation(problems, mode)?))
}

/// Decodes a delete's `DeleteOptions` body (an empty body is the default options).
///
/// # Errors
/// 400 for malformed JSON, a body that is not an object, another kind, or a field of the
/// wrong type (`"preconditions": "x"`, `"gracePeriodSeconds": "abc"`).
pub fn decode_delete_options(
    content_type: Option<&str>,
    bytes: &[u8],
) -> Result<DeleteOptionsBody, Status> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(DeleteOptionsBody::default());
    }
    let value = if media_type(content_type) == super::protobuf::PROTOBUF {
        super::protobuf::decode(bytes)
            .map_err(|e| Status::bad_request(format!("error decoding the protobuf body: {e}")))?
    } else {
        parse_object(bytes)?.0
    };
    let options: DeleteOptionsBody = serde_json::from_value(value)
        .map_err(|e| Status::bad_request(format!("invalid DeleteOptions: {e}")))?;
    match options.kind.as_deref() {
        None | Some("") | Some("DeleteOptions") => Ok(options),
        Some(other) => Err(Status::bad_request(format!(
            "decoded object of kind {other:?} cannot be converted to DeleteOptions"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_and_field_validation() {
        for mode in [FieldValidation::Strict, FieldValidation::Warn] {
            assert!(decode_object(b"[1]", mode).is_err());
            assert!(decode_object(b"{", mode).is_err());
        }
        let dup = br#"{"spec":1,"spec":2}"#;
        let strict = decode_object(dup, FieldValidation::Strict).unwrap_err();
        assert_eq!(strict.code, 400);
        assert!(
            strict.message.contains("duplicate field \"spec\""),
            "{strict:?}"
        );
        let (_, warned) = decode_object(dup, FieldValidation::Warn).unwrap();
        assert_eq!(warned, vec!["duplicate field \"spec\""]);
        let (_, ignored) = decode_object(dup, FieldValidation::Ignore).unwrap();
        assert!(ignored.is_empty());
        let (_, w) = decode_patch(PatchKind::Merge, dup, FieldValidation::Warn).unwrap();
        assert_eq!(w.len(), 1);
        assert!(decode_patch(PatchKind::Merge, dup, FieldValidation::Strict).is_err());
    }

    #[test]
    fn delete_options() {
        assert!(decode_delete_options(None, b" \n")
            .unwrap()
            .preconditions
            .is_none());
        let ok = decode_delete_options(
            None,
            br#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background","preconditions":{"uid":"u"},"extra":1}"#,
        )
        .unwrap();
        assert_eq!(ok.preconditions.unwrap().uid.as_deref(), Some("u"));
        for bad in [
            &br#"{"preconditions":"x"}"#[..],
            br#"{"preconditions":{"uid":5}}"#,
            br#"{"gracePeriodSeconds":"abc"}"#,
            br#"{"gracePeriodSeconds":1.5}"#,
            br#"{"propagationPolicy":5}"#,
            br#"{"dryRun":"All"}"#,
            br#"{"kind":"Pod","apiVersion":"v1"}"#,
            b"not json",
            b"[1]",
        ] {
            let e = decode_delete_options(None, bad).unwrap_err();
            assert_eq!(e.code, 400, "{}", String::from_utf8_lossy(bad));
        }
        let e = decode_delete_options(None, br#"{"preconditions":"x"}"#).unwrap_err();
        assert!(e.message.contains("Preconditions"), "{}", e.message);
    }
}
