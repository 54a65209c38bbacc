//! ABI versions: a module built for any minor version the host speaks loads and runs, and is told
//! exactly what its version defines (the requester since 1.1); a newer minor or another major
//! version is refused at load. The module under test echoes each request it is sent
//! (`strategies/artifacts/fixtures/echo_request.wat`), so the test decodes what the host told it.

use std::sync::Arc;

use crate::wasm_common::*;
use prost::Message;
use serde_json::json;
use strategy_host::strategy::{Strategy, StrategyContext};
use strategy_host::user::UserInfo;
use strategy_host::wasm::WasmStrategy;
use strategy_host::wasm_runtime::abi::{self, AbiVersion};
use strategy_host::wasm_runtime::{Error, StrategyModule};

/// The Widget manifest of the fixtures, claiming ABI version 1.`minor`.
fn manifest(minor: u32) -> Vec<u8> {
    let mut m = abi::Manifest::decode(widget_manifest(1, &[]).as_slice()).unwrap();
    m.abi_minor_version = minor;
    m.encode_to_vec()
}

fn alice() -> StrategyContext {
    StrategyContext {
        user: Arc::new(UserInfo {
            username: "alice".into(),
            uid: "u-1".into(),
            groups: vec!["dev".into()],
            extra: [("scopes".to_owned(), vec!["a".to_owned()])].into(),
        }),
        ..widget_ctx()
    }
}

/// Loads the echoing module claiming `manifest`, runs a create as alice, and decodes the request
/// it was sent (echoed in hex as the one warning).
async fn request_told(manifest: Vec<u8>) -> abi::Request {
    let rt = runtime();
    let module = StrategyModule::load(&rt, &strategy_artifacts::echo_request(&manifest))
        .expect("the module loads");
    let s = WasmStrategy::new(rt, Arc::new(module));
    let mut widget = json!({"metadata": {"name": "w"}});
    let admission = s
        .before_create(&alice(), &mut widget)
        .await
        .expect("the call runs");
    assert_eq!(admission.warnings.len(), 1, "{admission:?}");
    assert_eq!(
        widget,
        json!({"metadata": {"name": "w"}}),
        "the object is unchanged"
    );
    let hex = admission.warnings[0].as_bytes();
    let bytes: Vec<u8> = hex
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect();
    abi::Request::decode(bytes.as_slice()).expect("the echoed request decodes")
}

#[tokio::test]
async fn a_module_built_for_abi_1_0_still_loads_runs_and_is_told_no_user() {
    // widget_manifest names no minor version, as every module built before 1.1.
    let request = request_told(widget_manifest(1, &[])).await;
    let ctx = request.context.expect("a context");
    assert_eq!(ctx.request_id, "test-request");
    assert_eq!(ctx.resource.expect("the resource").kind, "Widget");
    assert_eq!(ctx.user, None, "1.0 defines no user");
    assert!(matches!(
        request.operation,
        Some(abi::request::Operation::BeforeCreate(_))
    ));
}

#[tokio::test]
async fn a_module_built_for_abi_1_1_is_told_the_user() {
    let ctx = request_told(manifest(1)).await.context.expect("a context");
    let user = ctx.user.expect("1.1 tells the user");
    assert_eq!(
        (
            user.username.as_str(),
            user.uid.as_str(),
            user.groups.as_slice()
        ),
        ("alice", "u-1", ["dev".to_owned()].as_slice())
    );
    assert_eq!(user.extra["scopes"].values, ["a"]);
}

#[test]
fn a_newer_minor_version_is_refused_at_load() {
    let rt = runtime();
    let newer = AbiVersion {
        minor: AbiVersion::HOST.minor + 1,
        ..AbiVersion::HOST
    };
    let bytes = strategy_artifacts::echo_request(&manifest(newer.minor));
    match StrategyModule::load(&rt, &bytes) {
        Err(Error::AbiVersion { found, expected }) => {
            assert_eq!((found, expected), (newer, AbiVersion::HOST))
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a module newer than the host loaded"),
    }
}
