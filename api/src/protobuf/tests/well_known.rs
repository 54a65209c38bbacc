//! The JSON forms of Time, MicroTime, IntOrString, Quantity, FieldsV1, RawExtension and bytes.

use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use k8s_pb::apimachinery::pkg::runtime::RawExtension;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{json, Value};

use super::super::bridge::JsonValue;

fn time(seconds: Option<i64>, nanos: Option<i32>) -> Time {
    Time { seconds, nanos }
}

fn micro(seconds: Option<i64>, nanos: Option<i32>) -> MicroTime {
    MicroTime { seconds, nanos }
}

#[test]
fn time_is_whole_seconds_in_utc() {
    let t = time(Some(1_704_164_645), Some(0));
    assert_eq!(t.to_json().unwrap(), json!("2024-01-02T03:04:05Z"));
    assert_eq!(Time::from_json(&json!("2024-01-02T03:04:05Z")).unwrap(), t);
    // Nanos are dropped both ways, and offsets are normalised to UTC.
    assert_eq!(
        time(Some(1_704_164_645), Some(999)).to_json().unwrap(),
        json!("2024-01-02T03:04:05Z")
    );
    assert_eq!(
        Time::from_json(&json!("2024-01-02T04:04:05.75+01:00")).unwrap(),
        t
    );
    assert_eq!(
        time(Some(0), Some(0)).to_json().unwrap(),
        json!("1970-01-01T00:00:00Z")
    );
    assert_eq!(
        time(Some(-1), None).to_json().unwrap(),
        json!("1969-12-31T23:59:59Z")
    );
}

#[test]
fn micro_time_has_six_fraction_digits() {
    let t = micro(Some(1_704_164_645), Some(123_456_000));
    assert_eq!(t.to_json().unwrap(), json!("2024-01-02T03:04:05.123456Z"));
    assert_eq!(
        MicroTime::from_json(&json!("2024-01-02T03:04:05.123456Z")).unwrap(),
        t
    );
    assert_eq!(
        MicroTime::from_json(&json!("2024-01-02T03:04:05.123456789Z")).unwrap(),
        t
    );
    assert_eq!(
        micro(Some(1_704_164_645), None).to_json().unwrap(),
        json!("2024-01-02T03:04:05.000000Z")
    );
    assert_eq!(
        MicroTime::from_json(&json!("2024-01-02T03:04:05Z")).unwrap(),
        micro(Some(1_704_164_645), Some(0))
    );
    assert_eq!(
        MicroTime::from_json(&json!("2024-01-02T03:04:05.5Z")).unwrap(),
        micro(Some(1_704_164_645), Some(500_000_000))
    );
    assert!(micro(Some(0), Some(-1)).to_json().is_err());
    assert!(micro(Some(0), Some(1_000_000_000)).to_json().is_err());
}

#[test]
fn unset_and_go_zero_times_are_no_value() {
    // An empty message is Go's zero time (`Time.Marshal` writes nothing for it).
    assert_eq!(time(None, None).to_json().unwrap(), Value::Null);
    assert_eq!(micro(None, None).to_json().unwrap(), Value::Null);
    // 0001-01-01T00:00:00Z, Go's zero time written out.
    assert_eq!(
        time(Some(-62_135_596_800), Some(0)).to_json().unwrap(),
        Value::Null
    );
    assert_eq!(
        micro(Some(-62_135_596_800), Some(0)).to_json().unwrap(),
        Value::Null
    );
    // Years past 9999 have no RFC 3339 form.
    assert!(time(Some(253_402_300_800), None).to_json().is_err());
    assert!(Time::from_json(&json!("2024-13-01T00:00:00Z")).is_err());
    assert!(Time::from_json(&json!(1_704_164_645)).is_err());
}

#[test]
fn int_or_string_is_a_number_or_a_string() {
    let int = IntOrString::from_json(&json!(8080)).unwrap();
    assert_eq!((int.r#type, int.int_val), (Some(0), Some(8080)));
    assert_eq!(int.to_json().unwrap(), json!(8080));
    let string = IntOrString::from_json(&json!("http")).unwrap();
    assert_eq!(
        (string.r#type, string.str_val.as_deref()),
        (Some(1), Some("http"))
    );
    assert_eq!(string.to_json().unwrap(), json!("http"));
    assert_eq!(IntOrString::default().to_json().unwrap(), json!(0));
    assert!(IntOrString::from_json(&json!(true)).is_err());
    assert!(IntOrString::from_json(&json!(1.5)).is_err());
    let bad = IntOrString {
        r#type: Some(7),
        ..Default::default()
    };
    assert!(bad.to_json().is_err());
}

#[test]
fn quantity_is_a_string() {
    let q = Quantity::from_json(&json!("100Mi")).unwrap();
    assert_eq!(q.string.as_deref(), Some("100Mi"));
    assert_eq!(q.to_json().unwrap(), json!("100Mi"));
    assert_eq!(
        Quantity::from_json(&json!(2)).unwrap().to_json().unwrap(),
        json!("2")
    );
    assert_eq!(Quantity::default().to_json().unwrap(), json!("0"));
    assert!(Quantity::from_json(&json!([])).is_err());
}

#[test]
fn fields_v1_and_raw_extension_embed_json() {
    let doc = json!({"f:spec": {"f:replicas": {}}, "n": [1, "x", null]});
    let fields = FieldsV1::from_json(&doc).unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(fields.raw.as_deref().unwrap()).unwrap(),
        doc
    );
    assert_eq!(fields.to_json().unwrap(), doc);
    let ext = RawExtension::from_json(&json!("text")).unwrap();
    assert_eq!(ext.raw.as_deref(), Some(&b"\"text\""[..]));
    assert_eq!(ext.to_json().unwrap(), json!("text"));
    assert_eq!(RawExtension { raw: None }.to_json().unwrap(), Value::Null);
    assert!(RawExtension {
        raw: Some(b"\x00".to_vec())
    }
    .to_json()
    .is_err());
}

#[test]
fn bytes_are_padded_standard_base64() {
    let bytes = vec![0xfb, 0xff, 0x00];
    assert_eq!(bytes.to_json().unwrap(), json!("+/8A"));
    assert_eq!(Vec::<u8>::from_json(&json!("+/8A")).unwrap(), bytes);
    assert_eq!(Vec::<u8>::from_json(&json!("AQ==")).unwrap(), vec![1]);
    assert!(Vec::<u8>::from_json(&json!("AQ")).is_err());
    assert!(Vec::<u8>::from_json(&json!("-_8A")).is_err());
    assert!(Vec::<u8>::from_json(&json!(5)).is_err());
}
