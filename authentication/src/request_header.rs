//! Request header authentication (kube-apiserver's `--requestheader-*`): a connection whose
//! client certificate chains to the request header CA and names an allowed front proxy
//! (`front-proxy-client`; any name when none are listed) is a front proxy's, and its
//! requests' user is read from its headers — `X-Remote-User`, `X-Remote-Group`,
//! `X-Remote-Extra-<key>` (the key percent-encoded), `X-Remote-Uid`, or the names the flags
//! give. Headers from any other connection are never read.

use rustls::pki_types::CertificateDer;

use crate::user::UserInfo;
use crate::x509::{ClientCaError, ClientCertificates};
use strategy_host_https::pki::front_proxy::FrontProxy;

/// Who may act as a front proxy, and the headers it names users with.
#[derive(Debug, Clone)]
pub struct RequestHeader {
    certificates: ClientCertificates,
    allowed_names: Vec<String>,
    username_headers: Vec<String>,
    group_headers: Vec<String>,
    extra_prefixes: Vec<String>,
    uid_headers: Vec<String>,
}

fn lower(names: &[String]) -> Vec<String> {
    names.iter().map(|n| n.to_ascii_lowercase()).collect()
}

/// `%XX` escapes decoded (an extra key's), the rest kept.
fn unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl RequestHeader {
    /// The front proxy `front_proxy` describes (its request header CA, allowed names and
    /// headers); `None` when it has no request header CA.
    ///
    /// # Errors
    /// The request header CA does not parse.
    pub fn new(front_proxy: &FrontProxy) -> Result<Option<Self>, ClientCaError> {
        if front_proxy.requestheader_ca_pem.trim().is_empty() {
            return Ok(None);
        }
        Ok(Some(Self {
            certificates: ClientCertificates::new(&front_proxy.requestheader_ca_pem)?,
            allowed_names: front_proxy.allowed_names.clone(),
            username_headers: lower(&front_proxy.username_headers),
            group_headers: lower(&front_proxy.group_headers),
            extra_prefixes: lower(&front_proxy.extra_headers_prefix),
            uid_headers: lower(&front_proxy.uid_headers),
        }))
    }

    /// Whether a connection's certificate chain is a front proxy's.
    pub fn is_front_proxy(&self, chain: Option<&[CertificateDer<'_>]>) -> bool {
        match self.certificates.verify(chain) {
            Some(Ok(proxy)) => {
                self.allowed_names.is_empty() || self.allowed_names.contains(&proxy.username)
            }
            _ => false,
        }
    }

    /// The user a front proxy's request `headers` (name, value; names in any case) name;
    /// `None` when they name no user.
    pub fn user<'a>(
        &self,
        headers: impl Iterator<Item = (&'a str, &'a str)> + Clone,
    ) -> Option<UserInfo> {
        let values = |names: &[String]| -> Vec<String> {
            headers
                .clone()
                .filter(|(n, _)| names.iter().any(|w| n.eq_ignore_ascii_case(w)))
                .map(|(_, v)| v.to_string())
                .collect()
        };
        let username = values(&self.username_headers)
            .into_iter()
            .find(|v| !v.is_empty())?;
        let mut user = UserInfo {
            username,
            uid: values(&self.uid_headers)
                .into_iter()
                .next()
                .unwrap_or_default(),
            groups: values(&self.group_headers),
            ..UserInfo::default()
        };
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            let key = self
                .extra_prefixes
                .iter()
                .find_map(|prefix| name.strip_prefix(prefix.as_str()));
            if let Some(key) = key.filter(|k| !k.is_empty()) {
                user.extra
                    .entry(unescape(key).to_ascii_lowercase())
                    .or_default()
                    .push(value.to_string());
            }
        }
        Some(user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::x509::tests::der;
    use strategy_host_https::pki::front_proxy::{load_or_generate, FrontProxyFlags};

    /// A front proxy generated as with no flags, into a directory kept as long as it.
    fn generated() -> (tempfile::TempDir, FrontProxy) {
        let dir = tempfile::tempdir().unwrap();
        let front_proxy = load_or_generate(&FrontProxyFlags::default(), dir.path()).unwrap();
        (dir, front_proxy)
    }

    #[test]
    fn only_the_front_proxys_certificate_makes_headers_count() {
        let (_dir, front_proxy) = generated();
        let header = RequestHeader::new(&front_proxy).unwrap().unwrap();
        assert!(header.is_front_proxy(Some(&der(&front_proxy.client_cert_pem))));
        assert!(!header.is_front_proxy(None));
        // Another front proxy CA's certificate is not one.
        let (_other_dir, other) = generated();
        assert!(!header.is_front_proxy(Some(&der(&other.client_cert_pem))));
        // Nor is one whose name is not allowed.
        let picky = FrontProxy {
            allowed_names: vec!["aggregator".into()],
            ..front_proxy.clone()
        };
        let picky = RequestHeader::new(&picky).unwrap().unwrap();
        assert!(!picky.is_front_proxy(Some(&der(&front_proxy.client_cert_pem))));
    }

    #[test]
    fn the_user_is_read_as_kube_apiserver_reads_it() {
        let (_dir, front_proxy) = generated();
        let header = RequestHeader::new(&front_proxy).unwrap().unwrap();
        let headers = [
            ("X-Remote-User", "alice"),
            ("x-remote-group", "dev"),
            ("X-Remote-Group", "system:authenticated"),
            ("X-Remote-Extra-Example.com%2Fscope", "a"),
            ("X-Remote-Extra-example.com%2fscope", "b"),
            ("Accept", "application/json"),
        ];
        let user = header.user(headers.iter().copied()).unwrap();
        assert_eq!(user.username, "alice");
        assert_eq!(user.groups, ["dev", "system:authenticated"]);
        assert_eq!(user.extra["example.com/scope"], ["a", "b"]);
        assert!(header
            .user([("X-Remote-Group", "dev")].into_iter())
            .is_none());
    }
}
