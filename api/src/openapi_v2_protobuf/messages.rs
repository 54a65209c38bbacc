//! gnostic's `openapi.v2` messages, the fields this server fills, compiled by prost from
//! `host/proto/openapi_v2.proto`.
#![allow(missing_docs, unreachable_pub, clippy::large_enum_variant)]

include!(concat!(env!("OUT_DIR"), "/openapi.v2.rs"));
