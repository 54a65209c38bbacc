//! ServiceAccount issuer discovery: the OpenID provider configuration
//! (`/.well-known/openid-configuration`) and the key set (`/openid/v1/jwks`) with which anyone
//! can verify this server's ServiceAccount tokens, as kube-apiserver serves them.

use base64::Engine as _;
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters, Jwk, JwkSet,
    KeyAlgorithm, PublicKeyUse, RSAKeyParameters, RSAKeyType,
};
use serde_json::json;
use sha2::{Digest as _, Sha256};
use x509_parser::error::{PEMError, X509Error};
use x509_parser::oid_registry::{OID_EC_P256, OID_NIST_EC_P384};
use x509_parser::prelude::{FromDer as _, SubjectPublicKeyInfo, X509Certificate};
use x509_parser::public_key::PublicKey;

/// Where the provider configuration is served.
pub const OPENID_CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
/// Where the key set is served.
pub const JWKS_PATH: &str = "/openid/v1/jwks";
/// The key set's media type.
pub const JWKS_CONTENT_TYPE: &str = "application/jwk-set+json";
/// How long clients may cache either document (kube-apiserver's hour).
pub const CACHE_CONTROL: &str = "public, max-age=3600";

/// Why the discovery documents cannot be served (kube-apiserver's wording). The server logs it
/// and serves neither document, as kube-apiserver does.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The issuer is not a URL OpenID Connect accepts.
    #[error("issuer URL must use https scheme, got: {0}")]
    IssuerNotHttps(String),
    /// The issuer has a query.
    #[error("issuer URL may not include a query, got: {0}")]
    IssuerQuery(String),
    /// The issuer has a fragment.
    #[error("issuer URL may not include a fragment, got: {0}")]
    IssuerFragment(String),
    /// `--service-account-jwks-uri` is not https.
    #[error("jwksURI requires https scheme, parsed as: {0}")]
    JwksUriNotHttps(String),
    /// A verifying key cannot be published.
    #[error("error constructing JWK for key #{index}: {source}")]
    Key {
        /// Its position among the verifying keys.
        index: usize,
        /// What is wrong with it.
        #[source]
        source: PublicKeyError,
    },
    /// No key to publish.
    #[error("no keys provided for validating keyset")]
    NoKeys,
}

/// Why a PEM block is not a public key this server can read, or publish as a JWK.
#[derive(Debug, thiserror::Error)]
pub enum PublicKeyError {
    /// The text is not PEM.
    #[error("not a PEM block: {0}")]
    NotPem(#[source] x509_parser::nom::Err<PEMError>),
    /// A `CERTIFICATE` block that does not parse.
    #[error("not a certificate: {0}")]
    NotCertificate(#[source] x509_parser::nom::Err<X509Error>),
    /// A block of another kind than `PUBLIC KEY` or `CERTIFICATE`.
    #[error("a {0:?} PEM block is not a public key or certificate")]
    Label(String),
    /// The SubjectPublicKeyInfo does not parse.
    #[error("not a public key: {0}")]
    NotPublicKey(#[source] x509_parser::nom::Err<X509Error>),
    /// The key in it does not parse.
    #[error(transparent)]
    Unreadable(#[from] X509Error),
    /// An EC key on a curve other than P-256 or P-384.
    #[error("unknown private key curve, must be 256 or 384")]
    UnknownCurve,
    /// An EC key whose point is compressed.
    #[error("the EC point is not uncompressed")]
    CompressedPoint,
    /// A key neither RSA nor EC.
    #[error("unknown public key type, must be RSA or ECDSA")]
    UnknownKeyType,
}

/// The two documents, rendered once.
#[derive(Debug, Clone)]
pub struct IssuerDiscovery {
    /// The provider configuration (JSON).
    pub configuration: Vec<u8>,
    /// The key set (JSON).
    pub jwks: Vec<u8>,
}

impl IssuerDiscovery {
    /// The documents for `issuer`, naming `jwks_uri` (or, when it is `None`, the key set at
    /// `external_url` — the server's own https URL), publishing `public_key_pems`.
    ///
    /// # Errors
    /// As [`DiscoveryError`].
    pub fn new(
        issuer: &str,
        jwks_uri: Option<&str>,
        external_url: &str,
        public_key_pems: &[String],
    ) -> Result<Self, DiscoveryError> {
        let scheme_rest = issuer.split_once("://");
        if !matches!(scheme_rest, Some(("https", rest)) if !rest.is_empty()) {
            return Err(DiscoveryError::IssuerNotHttps(issuer.into()));
        }
        if issuer.contains('?') {
            return Err(DiscoveryError::IssuerQuery(issuer.into()));
        }
        if issuer.contains('#') {
            return Err(DiscoveryError::IssuerFragment(issuer.into()));
        }
        let jwks_uri = match jwks_uri {
            Some(uri) if !uri.starts_with("https://") => {
                return Err(DiscoveryError::JwksUriNotHttps(uri.into()))
            }
            Some(uri) => uri.to_string(),
            None => format!("{}{JWKS_PATH}", external_url.trim_end_matches('/')),
        };
        let mut keys: Vec<Jwk> = Vec::new();
        for (index, pem) in public_key_pems.iter().enumerate() {
            let jwk = jwk_of_pem(pem).map_err(|source| DiscoveryError::Key { index, source })?;
            // The signing key is usually also among the verifying keys: publish it once.
            if !keys.iter().any(|k| k.common.key_id == jwk.common.key_id) {
                keys.push(jwk);
            }
        }
        if keys.is_empty() {
            return Err(DiscoveryError::NoKeys);
        }
        let mut algorithms: Vec<String> = keys
            .iter()
            .filter_map(|k| k.common.key_algorithm)
            .map(|a| a.to_string())
            .collect();
        algorithms.sort();
        algorithms.dedup();
        let configuration = json!({
            "issuer": issuer,
            "jwks_uri": jwks_uri,
            // Kubernetes issues ID tokens only, with the account's name as a public subject.
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algorithms,
        });
        let jwks = serde_json::to_vec(&JwkSet { keys }).expect("a key set serializes");
        Ok(Self {
            configuration: configuration.to_string().into_bytes(),
            jwks,
        })
    }
}

/// The key id of a public key, as kube-apiserver derives it: the unpadded base64url SHA-256
/// of its DER SubjectPublicKeyInfo.
pub fn key_id(spki_der: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(spki_der))
}

/// The SubjectPublicKeyInfo (DER) of a PEM public key or certificate.
///
/// # Errors
/// Not PEM, or another kind of PEM block.
pub fn spki_der_of_pem(pem: &str) -> Result<Vec<u8>, PublicKeyError> {
    let (_, block) =
        x509_parser::pem::parse_x509_pem(pem.as_bytes()).map_err(PublicKeyError::NotPem)?;
    match block.label.as_str() {
        "PUBLIC KEY" => Ok(block.contents),
        "CERTIFICATE" => {
            let (_, cert) = X509Certificate::from_der(&block.contents)
                .map_err(PublicKeyError::NotCertificate)?;
            Ok(cert.public_key().raw.to_vec())
        }
        other => Err(PublicKeyError::Label(other.to_owned())),
    }
}

/// The JWK of a PEM public key: RS256 for RSA, ES256 or ES384 for EC (the keys this server
/// signs and verifies with).
fn jwk_of_pem(pem: &str) -> Result<Jwk, PublicKeyError> {
    let der = spki_der_of_pem(pem)?;
    let (_, spki) = SubjectPublicKeyInfo::from_der(&der).map_err(PublicKeyError::NotPublicKey)?;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let (algorithm, parameters) = match spki.parsed()? {
        PublicKey::RSA(rsa) => (
            KeyAlgorithm::RS256,
            AlgorithmParameters::RSA(RSAKeyParameters {
                key_type: RSAKeyType::RSA,
                n: b64(strip_leading_zeros(rsa.modulus)),
                e: b64(strip_leading_zeros(rsa.exponent)),
            }),
        ),
        PublicKey::EC(point) => {
            let curve_oid = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok());
            let (algorithm, curve, size) = match curve_oid {
                Some(oid) if oid == OID_EC_P256 => (KeyAlgorithm::ES256, EllipticCurve::P256, 32),
                Some(oid) if oid == OID_NIST_EC_P384 => {
                    (KeyAlgorithm::ES384, EllipticCurve::P384, 48)
                }
                _ => return Err(PublicKeyError::UnknownCurve),
            };
            // An uncompressed point: 0x04, then x and y.
            let data = point.data();
            if data.len() != 1 + 2 * size || data[0] != 4 {
                return Err(PublicKeyError::CompressedPoint);
            }
            (
                algorithm,
                AlgorithmParameters::EllipticCurve(EllipticCurveKeyParameters {
                    key_type: Default::default(),
                    curve,
                    x: b64(&data[1..=size]),
                    y: b64(&data[1 + size..]),
                }),
            )
        }
        _ => return Err(PublicKeyError::UnknownKeyType),
    };
    Ok(Jwk {
        common: CommonParameters {
            public_key_use: Some(PublicKeyUse::Signature),
            key_algorithm: Some(algorithm),
            key_id: Some(key_id(&der)),
            ..Default::default()
        },
        algorithm: parameters,
    })
}

/// A DER integer's magnitude without the sign byte (JWK integers are unsigned big-endian).
fn strip_leading_zeros(bytes: &[u8]) -> &[u8] {
    let first = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    &bytes[first..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn documents(key: &rcgen::KeyPair) -> (Value, Value) {
        let d = IssuerDiscovery::new(
            "https://issuer.example",
            None,
            "https://127.0.0.1:6443",
            &[key.public_key_pem(), key.public_key_pem()],
        )
        .unwrap();
        (
            serde_json::from_slice(&d.configuration).unwrap(),
            serde_json::from_slice(&d.jwks).unwrap(),
        )
    }

    #[test]
    fn the_configuration_names_the_issuer_the_key_set_and_its_algorithms() {
        let key = rcgen::KeyPair::generate().unwrap();
        let (configuration, jwks) = documents(&key);
        assert_eq!(configuration["issuer"], "https://issuer.example");
        assert_eq!(
            configuration["jwks_uri"],
            "https://127.0.0.1:6443/openid/v1/jwks"
        );
        assert_eq!(
            configuration["id_token_signing_alg_values_supported"],
            json!(["ES256"])
        );
        // The same key twice is published once, under its SPKI digest.
        let keys = jwks["keys"].as_array().unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(
            keys[0]["kid"],
            key_id(&spki_der_of_pem(&key.public_key_pem()).unwrap())
        );
        assert_eq!(keys[0]["kty"], "EC");
        assert_eq!(keys[0]["crv"], "P-256");
        assert_eq!(keys[0]["use"], "sig");
    }

    #[test]
    fn a_token_verifies_against_the_published_rsa_key() {
        // ring cannot generate RSA keys: a test key made with `openssl genpkey`.
        let pem = include_str!("../testdata/rsa-2048.pem");
        let key = rcgen::KeyPair::from_pem(pem).unwrap();
        let (_, jwks) = documents(&key);
        let set: JwkSet = serde_json::from_value(jwks).unwrap();
        let decoding = jsonwebtoken::DecodingKey::from_jwk(&set.keys[0]).unwrap();
        let encoding =
            jsonwebtoken::EncodingKey::from_rsa_pem(key.serialize_pem().as_bytes()).unwrap();
        let token = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
            &json!({"sub": "x", "exp": 4_000_000_000u64}),
            &encoding,
        )
        .unwrap();
        let validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
        jsonwebtoken::decode::<Value>(&token, &decoding, &validation).unwrap();
    }

    #[test]
    fn an_issuer_or_key_set_uri_that_is_not_https_is_refused_with_kubernetes_words() {
        let key = rcgen::KeyPair::generate().unwrap().public_key_pem();
        let make = |issuer: &str, jwks: Option<&str>| {
            IssuerDiscovery::new(issuer, jwks, "https://h:1", std::slice::from_ref(&key))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            make("http://issuer", None),
            "issuer URL must use https scheme, got: http://issuer"
        );
        assert_eq!(
            make("https://issuer?a=b", None),
            "issuer URL may not include a query, got: https://issuer?a=b"
        );
        assert_eq!(
            make("https://issuer", Some("http://keys")),
            "jwksURI requires https scheme, parsed as: http://keys"
        );
        let none = IssuerDiscovery::new("https://i", None, "https://h", &[]).unwrap_err();
        assert_eq!(none.to_string(), "no keys provided for validating keyset");
        let private = rcgen::KeyPair::generate().unwrap().serialize_pem();
        let refused = IssuerDiscovery::new("https://i", None, "https://h", &[private]).unwrap_err();
        assert!(matches!(
            refused,
            DiscoveryError::Key {
                index: 0,
                source: PublicKeyError::Label(_)
            }
        ));
        assert_eq!(
            refused.to_string(),
            r#"error constructing JWK for key #0: a "PRIVATE KEY" PEM block is not a public key or certificate"#
        );
    }
}
