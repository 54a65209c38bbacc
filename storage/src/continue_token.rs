//! The opaque `continue` token of a paged list: the revision the first page was read at and the
//! key to resume from, relative to the listed prefix, as base64 JSON (Kubernetes' own format).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::error::{Result, StorageError};

#[derive(Serialize, Deserialize)]
struct TokenBody {
    /// Format version, so old tokens can be told apart from future ones.
    v: String,
    /// The revision every page of the list is consistent at.
    rv: i64,
    /// The next key to read, relative to the listed prefix.
    start: String,
}

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// A decoded continue token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContinueToken {
    /// The revision the list is consistent at.
    pub revision: u64,
    /// The full key to resume from (inclusive).
    pub start_key: String,
}

impl ContinueToken {
    /// Encodes a token for `next_key` under `list_prefix`.
    pub fn encode(revision: u64, list_prefix: &str, next_key: &str) -> String {
        let start = next_key.strip_prefix(list_prefix).unwrap_or(next_key);
        let body = TokenBody {
            v: TOKEN_VERSION.to_string(),
            rv: revision as i64,
            start: start.to_string(),
        };
        BASE64.encode(serde_json::to_vec(&body).expect("token body serializes"))
    }

    /// Decodes a token for a list of `list_prefix`.
    ///
    /// # Errors
    /// `BadRequest` when the token is not one of ours or tries to leave the prefix.
    pub fn decode(token: &str, list_prefix: &str) -> Result<Self> {
        let bad = |why: &str| StorageError::BadRequest(format!("continue key is not valid: {why}"));
        let bytes = BASE64.decode(token).map_err(|_| bad("not base64"))?;
        let body: TokenBody = serde_json::from_slice(&bytes).map_err(|_| bad("not a token"))?;
        if body.v != TOKEN_VERSION {
            return Err(bad("unknown version"));
        }
        if body.rv <= 0 {
            return Err(bad(
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ));
        }
        if body.start.is_empty()
            || body
                .start
                .split('/')
                .any(|segment| segment == "." || segment == "..")
        {
            return Err(bad("invalid start key"));
        }
        Ok(Self {
            revision: body.rv as u64,
            start_key: format!("{list_prefix}{}", body.start),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejections() {
        let t = ContinueToken::encode(9, "/r/pods/", "/r/pods/ns/b");
        let d = ContinueToken::decode(&t, "/r/pods/").unwrap();
        assert_eq!(d.revision, 9);
        assert_eq!(d.start_key, "/r/pods/ns/b");
        assert!(ContinueToken::decode("!!", "/r/")
            .unwrap_err()
            .is_bad_request());
        let escape = BASE64.encode(br#"{"v":"meta.k8s.io/v1","rv":3,"start":"../x"}"#);
        assert!(ContinueToken::decode(&escape, "/r/").is_err());
    }
}
