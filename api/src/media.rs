//! Media types: what a `Content-Type` (or one `Accept` entry) names, without its parameters,
//! and which encoding an `Accept` header prefers.

/// The media type of a `Content-Type` header, lowercased, without parameters.
pub(crate) fn media_type(content_type: Option<&str>) -> String {
    content_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Whether an `Accept` header prefers Kubernetes protobuf: it names protobuf before JSON or a
/// wildcard (client-go sends `application/vnd.kubernetes.protobuf,application/json`).
pub(crate) fn prefers_protobuf(accept: Option<&str>) -> bool {
    for entry in accept.unwrap_or("").split(',') {
        match media_type(Some(entry)).as_str() {
            super::protobuf::PROTOBUF => return true,
            "application/json" | "*/*" | "application/*" => return false,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::{media_type, prefers_protobuf};

    #[test]
    fn protobuf_is_chosen_when_named_first() {
        assert!(prefers_protobuf(Some(
            "application/vnd.kubernetes.protobuf, */*"
        )));
        assert!(prefers_protobuf(Some(
            "application/vnd.kubernetes.protobuf;stream=watch"
        )));
        assert!(!prefers_protobuf(Some(
            "application/json, application/vnd.kubernetes.protobuf"
        )));
        assert!(!prefers_protobuf(None));
    }

    #[test]
    fn parameters_and_case_are_ignored() {
        assert_eq!(
            media_type(Some("Application/JSON; charset=utf-8")),
            "application/json"
        );
        assert_eq!(media_type(None), "");
    }
}
