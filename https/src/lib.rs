//! The HTTPS Strategy Host speaks besides serving: [`pki`], the certificates and keys it makes
//! (or reads from flags) and the roots it trusts; and [`webhook`], the one client it calls out
//! with — admission and conversion webhooks, extension API servers, OIDC discovery — with its
//! connection pools and kubeconfigs.
//!
//! A leaf crate: it knows nothing of storage, the registry or the API.

pub mod pki;
pub mod webhook;
