//! PATCH bodies: JSON merge patch (RFC 7386) and JSON patch (RFC 6902, the `json-patch` crate);
//! strategic merge and apply patches are refused with 415 as for custom resources.

use serde_json::Value;

use super::status::Status;

/// A supported patch type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchKind {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
}

/// The patch type of a `Content-Type`.
///
/// # Errors
/// 415 for strategic merge, apply and anything else.
pub(crate) fn patch_kind(content_type: Option<&str>) -> Result<PatchKind, Status> {
    match super::media::media_type(content_type).as_str() {
        "application/merge-patch+json" => Ok(PatchKind::Merge),
        "application/json-patch+json" => Ok(PatchKind::Json),
        "application/strategic-merge-patch+json" => Err(Status::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json (strategic merge patch is not supported for custom resources)",
        )),
        "application/apply-patch+yaml" => Err(Status::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json (server-side apply is not supported by this server yet; use client-side kubectl apply)",
        )),
        _ => Err(Status::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json",
        )),
    }
}

/// A decoded patch, ready to apply to any current object.
#[derive(Debug, Clone)]
pub(crate) enum Patch {
    /// A merge patch document.
    Merge(Value),
    /// A JSON patch.
    Json(json_patch::Patch),
}

impl Patch {
    /// Decodes a patch body.
    ///
    /// # Errors
    /// 400 for malformed JSON or a malformed JSON patch.
    pub(crate) fn decode(kind: PatchKind, bytes: &[u8]) -> Result<Self, Status> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?;
        match kind {
            PatchKind::Merge => {
                if !value.is_object() {
                    return Err(Status::bad_request("a merge patch must be a JSON object"));
                }
                Ok(Self::Merge(value))
            }
            PatchKind::Json => serde_json::from_value(value)
                .map(Self::Json)
                .map_err(|e| Status::bad_request(format!("error decoding JSON patch: {e}"))),
        }
    }

    /// Applies the patch to `current`.
    ///
    /// # Errors
    /// The reason a JSON patch operation failed (a failed test, a missing path).
    pub(crate) fn apply(&self, current: &Value) -> Result<Value, String> {
        let mut doc = current.clone();
        match self {
            Self::Merge(p) => json_patch::merge(&mut doc, p),
            Self::Json(p) => json_patch::patch(&mut doc, p).map_err(|e| e.to_string())?,
        }
        Ok(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patches() {
        let cur = json!({"spec": {"a": 1, "b": 2}});
        let m = Patch::decode(PatchKind::Merge, br#"{"spec":{"a":null,"c":3}}"#).unwrap();
        assert_eq!(m.apply(&cur).unwrap(), json!({"spec": {"b": 2, "c": 3}}));
        let j = Patch::decode(
            PatchKind::Json,
            br#"[{"op":"replace","path":"/spec/a","value":5}]"#,
        )
        .unwrap();
        assert_eq!(j.apply(&cur).unwrap()["spec"]["a"], 5);
        let t = Patch::decode(
            PatchKind::Json,
            br#"[{"op":"test","path":"/spec/a","value":9}]"#,
        )
        .unwrap();
        assert!(t.apply(&cur).is_err());
        assert_eq!(
            patch_kind(Some("application/strategic-merge-patch+json"))
                .unwrap_err()
                .code,
            415
        );
        assert!(Patch::decode(PatchKind::Json, b"{}").is_err());
    }
}
