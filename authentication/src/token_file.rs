//! Static bearer tokens from `--token-auth-file`, in Kubernetes' CSV format:
//! `token,user,uid,"group1,group2"` (groups optional), one user per line.

use std::collections::HashMap;
use std::path::Path;

use async_trait::async_trait;

use super::{Authenticator, Credentials, Outcome};
use crate::user::UserInfo;

/// The users of a token file, by token.
#[derive(Debug, Default)]
pub struct TokenFile {
    users: HashMap<String, UserInfo>,
}

/// Why a token file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file cannot be read.
    #[error("reading the token file {path}: {source}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line of the file is wrong.
    #[error("token file {path}: {source}")]
    Invalid {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with which line.
        source: LineError,
    },
}

/// A token file line that is not `token,user,uid[,"group1,group2"]`.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// The line is not CSV.
    #[error("line {line}: {source}")]
    Csv {
        /// Its number, from 1.
        line: usize,
        /// Why.
        source: csv::Error,
    },
    /// Fewer than three columns.
    #[error(
        "line {line}: must have at least 3 columns (token, user name, user uid), found {found}"
    )]
    TooFewColumns {
        /// Its number, from 1.
        line: usize,
        /// The columns it has.
        found: usize,
    },
    /// The first column is empty.
    #[error("line {line}: the token is empty")]
    EmptyToken {
        /// Its number, from 1.
        line: usize,
    },
}

impl TokenFile {
    /// Reads `path`.
    ///
    /// # Errors
    /// The file cannot be read, or a line has fewer than three columns or no token.
    pub fn read(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text).map_err(|source| TokenFileError::Invalid {
            path: path.to_owned(),
            source,
        })
    }

    /// Parses a token file's text.
    ///
    /// # Errors
    /// A line has fewer than three columns or an empty token, or is not CSV.
    pub fn parse(text: &str) -> Result<Self, LineError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let mut users = HashMap::new();
        for (i, record) in reader.records().enumerate() {
            let record = record.map_err(|source| LineError::Csv {
                line: i + 1,
                source,
            })?;
            if record.len() == 1 && record[0].is_empty() {
                continue;
            }
            if record.len() < 3 {
                return Err(LineError::TooFewColumns {
                    line: i + 1,
                    found: record.len(),
                });
            }
            if record[0].is_empty() {
                return Err(LineError::EmptyToken { line: i + 1 });
            }
            let groups = record
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            let user = UserInfo {
                username: record[1].to_string(),
                uid: record[2].to_string(),
                groups,
                ..UserInfo::default()
            };
            if users.insert(record[0].to_string(), user).is_some() {
                tracing::warn!(
                    line = i + 1,
                    "duplicate token in the token file; the later line wins"
                );
            }
        }
        Ok(Self { users })
    }

    /// How many tokens the file holds.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// True when the file holds no token.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

#[async_trait]
impl Authenticator for TokenFile {
    async fn authenticate(&self, credentials: &Credentials<'_>) -> Outcome {
        match credentials.bearer_token {
            Some(token) => match self.users.get(token) {
                Some(user) => Outcome::Authenticated(user.clone()),
                // Not ours: a ServiceAccount token may still match.
                None => Outcome::NotApplicable,
            },
            None => Outcome::NotApplicable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn kubernetes_csv_lines_become_users() {
        let file = TokenFile::parse(
            "t1,alice,uid-1,\"dev,ops\"\n\nt2, bob ,uid-2\nt3,carol,uid-3,viewers,extra\n",
        )
        .unwrap();
        assert_eq!(file.len(), 3);
        let creds = |t| Credentials {
            bearer_token: Some(t),
            ..Credentials::default()
        };
        let Outcome::Authenticated(alice) = file.authenticate(&creds("t1")).await else {
            panic!()
        };
        assert_eq!(
            (alice.username.as_str(), alice.uid.as_str()),
            ("alice", "uid-1")
        );
        assert_eq!(alice.groups, ["dev", "ops"]);
        let Outcome::Authenticated(bob) = file.authenticate(&creds("t2")).await else {
            panic!()
        };
        assert_eq!(bob.username, "bob");
        assert!(bob.groups.is_empty());
        assert_eq!(
            file.authenticate(&creds("nope")).await,
            Outcome::NotApplicable
        );
    }

    #[test]
    fn short_lines_are_refused_with_their_number() {
        let err = TokenFile::parse("t1,alice,uid\nt2,bob\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2") && err.contains("at least 3 columns"),
            "{err}"
        );
    }
}
