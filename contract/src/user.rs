//! Who makes a request (Kubernetes' `authentication/user`): the identity authentication
//! establishes and everything after it — authorization, admission, audit, strategies — reads.
//! A module of its own, below every layer that reads it.

/// Who makes a request: Kubernetes' `user.Info`, as authentication established it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UserInfo {
    /// The user name (`alice`, `system:serviceaccount:ns:name`, `system:anonymous`).
    pub username: String,
    /// A unique id (a ServiceAccount's uid); empty when the authenticator has none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The groups (`system:authenticated`, `system:masters`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Further attributes an authenticator adds (a ServiceAccount token's pod, credential id).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The user the server acts as for its own writes (bootstrap objects, expiry, hooks of
    /// trusted modules): `system:apiserver` in `system:masters`, as kube-apiserver's loopback
    /// client.
    pub fn server() -> Self {
        Self {
            username: "system:apiserver".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            ..Self::default()
        }
    }
}
