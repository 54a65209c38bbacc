//! The host side of the host/guest ABI: the prost messages of `guest-sdk/proto/strategy.proto`,
//! the versions the host speaks, the names of the exports and imports, and buffer packing.
#![allow(missing_docs, clippy::all)]

use std::fmt;

include!(concat!(env!("OUT_DIR"), "/strategy.v1.rs"));

/// The ABI's major version the host speaks: a module must name exactly this one.
pub const ABI_VERSION: u32 = 1;

/// The newest minor version of [`ABI_VERSION`] the host speaks; it loads modules of every minor
/// version up to this one (see [`AbiVersion`]).
pub const ABI_MINOR_VERSION: u32 = 5;

/// An ABI version as a module's manifest names it (`abi_version`, `abi_minor_version`).
///
/// A minor version only adds to the messages, so the host serves a module of any minor version
/// up to its own, telling it only what that version defines: 1.0 the first version, 1.1 the
/// requester ([`Context::user`]), 1.2 admission policies ([`Manifest::admission_policy`]), 1.3
/// version conversion ([`Operation::Convert`]), 1.4 changed objects answered as a JSON Patch
/// ([`Response::object_patch`]), 1.5 authorizers ([`Manifest::authorizer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct AbiVersion {
    /// Must equal [`ABI_VERSION`].
    pub major: u32,
    /// At most [`ABI_MINOR_VERSION`].
    pub minor: u32,
}

impl AbiVersion {
    /// The newest version the host speaks.
    pub const HOST: Self = Self {
        major: ABI_VERSION,
        minor: ABI_MINOR_VERSION,
    };

    /// Whether the host can serve a module built for this version.
    pub fn is_served(self) -> bool {
        self.major == Self::HOST.major && self.minor <= Self::HOST.minor
    }

    /// Whether modules of this version are told who makes a request (since 1.1).
    pub fn tells_user(self) -> bool {
        self.minor >= 1
    }
}

impl fmt::Display for AbiVersion {
    /// `major.minor`, e.g. `1.1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The module guests import host functions from.
pub const HOST_MODULE: &str = "strategy-host";

/// Splits an i64 result into (ptr, len): the pointer is the high half.
pub fn unpack(packed: i64) -> (u32, u32) {
    let packed = packed as u64;
    ((packed >> 32) as u32, packed as u32)
}

/// Packs a guest buffer as an i64 result.
pub fn pack(ptr: u32, len: u32) -> i64 {
    ((u64::from(ptr) << 32) | u64::from(len)) as i64
}
