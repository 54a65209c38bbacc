//! A module fetched by a plain download (`spec.url: https://…`), read up to the size limit.

use futures::StreamExt as _;

use super::PullError;

/// The bytes at `url`.
///
/// # Errors
/// [`PullError::Unavailable`] for a failed request or a status other than 200,
/// [`PullError::TooLarge`] past `limit`.
pub(super) async fn download(
    client: &reqwest::Client,
    url: &str,
    limit: usize,
) -> Result<Vec<u8>, PullError> {
    let unavailable = |detail: String| PullError::Unavailable {
        url: url.to_owned(),
        detail,
    };
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| unavailable(error_chain(&e)))?;
    if !response.status().is_success() {
        return Err(unavailable(format!(
            "the server answered {}",
            response.status()
        )));
    }
    let too_large = |size| PullError::TooLarge {
        url: url.to_owned(),
        size,
        limit,
    };
    if let Some(size) = response.content_length() {
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if size > limit {
            return Err(too_large(size));
        }
    }
    let mut stream = response.bytes_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        bytes.extend_from_slice(&chunk.map_err(|e| unavailable(error_chain(&e)))?);
        if bytes.len() > limit {
            return Err(too_large(bytes.len()));
        }
    }
    Ok(bytes)
}

/// An error with its causes, on one line (reqwest's own message omits them).
pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
