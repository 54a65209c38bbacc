//! The host side of the host/guest ABI: the prost messages of `guest-sdk/proto/strategy.proto`,
//! the names of the exports and imports, and buffer packing.
#![allow(missing_docs, clippy::all)]

include!(concat!(env!("OUT_DIR"), "/strategy.v1.rs"));

/// The ABI version the host speaks.
pub const ABI_VERSION: u32 = 1;

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
