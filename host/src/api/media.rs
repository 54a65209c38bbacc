//! Media types: what a `Content-Type` (or one `Accept` entry) names, without its parameters.

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

#[cfg(test)]
mod tests {
    use super::media_type;

    #[test]
    fn parameters_and_case_are_ignored() {
        assert_eq!(
            media_type(Some("Application/JSON; charset=utf-8")),
            "application/json"
        );
        assert_eq!(media_type(None), "");
    }
}
