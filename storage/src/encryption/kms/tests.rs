//! KMS v2 envelopes: kube-apiserver's stored format both ways, staleness, and what is refused.

use super::*;

const SEED: [u8; 32] = [7; 32];
const SEALED_SEED: &[u8] = b"sealed-by-the-plugin";
const KEY: &str = "/registry/secrets/default/db";

fn provider(key_id: &str) -> KmsProvider {
    KmsProvider::with_seed("vault", key_id, &SEED, SEALED_SEED)
}

/// A value as kube-apiserver writes it with a seed, built here step by step from its
/// description (HKDF-SHA256 expand of the seed with 32 random info bytes, AES-256-GCM with a
/// 12-byte nonce and the storage key as additional data).
fn written_by_kube_apiserver(plain: &[u8], key_id: &str, storage_key: &str) -> Vec<u8> {
    let info = [3u8; 32];
    let nonce = [5u8; 12];
    let hkdf = hkdf::Hkdf::<sha2::Sha256>::from_prk(&SEED).unwrap();
    let mut key = [0u8; 32];
    hkdf.expand(&info, &mut key).unwrap();
    let sealed = aes_gcm::Aes256Gcm::new_from_slice(&key)
        .unwrap()
        .encrypt(
            &nonce.into(),
            Payload {
                msg: plain,
                aad: storage_key.as_bytes(),
            },
        )
        .unwrap();
    let object = EncryptedObject {
        encrypted_data: [&info[..], &nonce[..], &sealed[..]].concat(),
        key_id: key_id.into(),
        encrypted_dek_source: SEALED_SEED.to_vec(),
        annotations: BTreeMap::from([("version.kms.example.com".into(), b"3".to_vec())]),
        encrypted_dek_source_type: 1,
    };
    prost::Message::encode_to_vec(&object)
}

fn payload_of(stored: &[u8]) -> &[u8] {
    stored
        .strip_prefix(b"k8s:enc:kms:v2:vault:".as_slice())
        .expect("the KMS v2 prefix")
}

#[test]
fn a_sealed_value_is_an_encrypted_object_that_opens_where_it_was_stored() {
    let p = provider("key-1");
    let plain = br#"{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}"#;
    let stored = p.seal(KEY, plain).unwrap();
    let object: EncryptedObject = prost::Message::decode(payload_of(&stored)).unwrap();
    assert_eq!(object.key_id, "key-1");
    assert_eq!(object.encrypted_dek_source, SEALED_SEED);
    assert_eq!(object.encrypted_dek_source_type, 1);
    // 32 bytes of info, a 12-byte nonce, the data and a 16-byte tag.
    assert_eq!(object.encrypted_data.len(), 32 + 12 + plain.len() + 16);
    assert!(!stored.windows(8).any(|w| w == b"aHVudGVy"));
    let (opened, current) = p.open(KEY, payload_of(&stored)).unwrap();
    assert_eq!(opened, plain);
    assert!(current);
    // Each write derives a key of its own.
    assert_ne!(p.seal(KEY, plain).unwrap(), stored);
    // Bound to its storage key.
    let moved = p
        .open("/registry/secrets/default/other", payload_of(&stored))
        .unwrap_err()
        .to_string();
    assert!(moved.contains("authentication failed"), "{moved}");
}

#[test]
fn a_value_written_by_kube_apiserver_opens_and_another_key_id_is_stale() {
    let stored = written_by_kube_apiserver(b"{\"kind\":\"Secret\"}", "key-1", KEY);
    let (plain, current) = provider("key-1").open(KEY, &stored).unwrap();
    assert_eq!(plain, b"{\"kind\":\"Secret\"}");
    assert!(current);
    // The plugin has moved on to another key: the value still opens, but an update rewrites it.
    let (_, current) = provider("key-2").open(KEY, &stored).unwrap();
    assert!(!current);
}

#[test]
fn a_value_of_kube_apiservers_before_seeds_opens_and_is_stale() {
    // Before 1.29: the sealed source is the AES-GCM key itself (type 0), no info prefix.
    let nonce = [9u8; 12];
    let sealed = aes_gcm::Aes256Gcm::new_from_slice(&SEED)
        .unwrap()
        .encrypt(
            &nonce.into(),
            Payload {
                msg: b"old".as_slice(),
                aad: KEY.as_bytes(),
            },
        )
        .unwrap();
    let object = EncryptedObject {
        encrypted_data: [&nonce[..], &sealed[..]].concat(),
        key_id: "key-1".into(),
        encrypted_dek_source: SEALED_SEED.to_vec(),
        annotations: BTreeMap::new(),
        encrypted_dek_source_type: 0,
    };
    let (plain, current) = provider("key-1")
        .open(KEY, &prost::Message::encode_to_vec(&object))
        .unwrap();
    assert_eq!(plain, b"old");
    assert!(!current, "values of a key, not a seed, are rewritten");
}

#[test]
fn objects_kube_apiserver_would_refuse_are_refused() {
    let p = provider("key-1");
    let good: EncryptedObject =
        prost::Message::decode(written_by_kube_apiserver(b"x", "key-1", KEY).as_slice()).unwrap();
    type Change = Box<dyn Fn(&mut EncryptedObject)>;
    let cases: [(&str, Change); 5] = [
        ("keyID is empty", Box::new(|o| o.key_id.clear())),
        (
            "encrypted DEK source is empty",
            Box::new(|o| o.encrypted_dek_source.clear()),
        ),
        (
            "exceeds the max size of 1024",
            Box::new(|o| o.encrypted_dek_source = vec![1; 1025]),
        ),
        (
            "should be a domain with at least two segments",
            Box::new(|o| {
                o.annotations.insert("version".into(), b"1".to_vec());
            }),
        ),
        (
            "unknown encryptedDEKSourceType: 7",
            Box::new(|o| o.encrypted_dek_source_type = 7),
        ),
    ];
    for (expected, change) in cases {
        let mut object = good.clone();
        change(&mut object);
        let error = p
            .open(KEY, &prost::Message::encode_to_vec(&object))
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{expected}: {error}");
    }
    let error = p
        .open(KEY, b"\xff\xff not protobuf")
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("invalid encrypted object"), "{error}");
}

#[test]
fn a_seed_the_plugin_cannot_open_fails_the_read_with_the_plugins_error() {
    let p = provider("key-1");
    let mut object: EncryptedObject =
        prost::Message::decode(written_by_kube_apiserver(b"x", "key-0", KEY).as_slice()).unwrap();
    object.encrypted_dek_source = b"sealed-elsewhere".to_vec();
    let error = p
        .open(KEY, &prost::Message::encode_to_vec(&object))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("failed to decrypt DEK, error: rpc error: code = "),
        "{error}"
    );
}

#[test]
fn without_a_sealed_seed_writes_fail_with_the_reason() {
    let p = provider("key-1");
    p.write.store(None);
    let error = p.seal(KEY, b"x").unwrap_err().to_string();
    assert!(error.contains("encryption state is missing"), "{error}");
}
