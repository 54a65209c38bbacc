//! The OCI distribution side: the wasm layer of a module's manifest (or of an index's wasm
//! entry), pulled with its digest checked against the manifest, and a module pushed in the CNCF
//! Wasm artifact layout.

use futures::StreamExt as _;
use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OciImageManifest, OciManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use sha2::{Digest as _, Sha256};

use super::PullError;

/// The CNCF Wasm artifact's layer media type.
pub const WASM_LAYER: &str = "application/wasm";
/// The config media type of the CNCF Wasm artifact layout.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The layer media types accepted as a module: the CNCF layout's, the one Kubewarden and
/// wasm-to-oci push, and the one Istio's tooling pushed.
pub const WASM_LAYERS: [&str; 3] = [
    WASM_LAYER,
    "application/vnd.wasm.content.layer.v1+wasm",
    "application/vnd.module.wasm.content.layer.v1+wasm",
];

/// The module `reference` names, and the digest of the manifest (or index) it resolved to.
///
/// # Errors
/// [`PullError::Unavailable`] when the registry cannot answer (network, credentials, missing tag),
/// [`PullError::NoWasmLayer`], [`PullError::TooLarge`], [`PullError::LayerDigest`].
pub(super) async fn pull(
    client: &Client,
    reference: &Reference,
    auth: &RegistryAuth,
    limit: usize,
) -> Result<(Vec<u8>, String), PullError> {
    let url = format!("oci://{}", reference.whole());
    let unavailable = |e: oci_client::errors::OciDistributionError| PullError::Unavailable {
        url: url.clone(),
        detail: e.to_string(),
    };
    let (manifest, resolved) = client
        .pull_manifest(reference, auth)
        .await
        .map_err(unavailable)?;
    let image = match manifest {
        OciManifest::Image(image) => image,
        OciManifest::ImageIndex(index) => {
            let entry = index
                .manifests
                .iter()
                .find(|m| {
                    m.platform.as_ref().is_some_and(|p| {
                        p.architecture.to_string() == "wasm" || p.os.to_string().starts_with("wasi")
                    })
                })
                .ok_or_else(|| PullError::NoWasmLayer {
                    url: url.clone(),
                    found: "an image index without a wasm platform entry".into(),
                })?;
            let by_digest = reference.clone_with_digest(entry.digest.clone());
            client
                .pull_image_manifest(&by_digest, auth)
                .await
                .map_err(unavailable)?
                .0
        }
    };
    let layer = wasm_layer(&image).ok_or_else(|| PullError::NoWasmLayer {
        url: url.clone(),
        found: describe_layers(&image),
    })?;
    let size = usize::try_from(layer.size).unwrap_or(usize::MAX);
    if size > limit {
        return Err(PullError::TooLarge { url, size, limit });
    }
    let mut stream = client
        .pull_blob_stream(reference, layer)
        .await
        .map_err(unavailable)?
        .stream;
    let mut bytes = Vec::with_capacity(size);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| PullError::Unavailable {
            url: url.clone(),
            detail: e.to_string(),
        })?;
        bytes.extend_from_slice(&chunk);
        if bytes.len() > limit {
            return Err(PullError::TooLarge {
                url,
                size: bytes.len(),
                limit,
            });
        }
    }
    let actual = format!("sha256:{:x}", Sha256::digest(&bytes));
    if actual != layer.digest {
        return Err(PullError::LayerDigest {
            url,
            expected: layer.digest.clone(),
            actual,
        });
    }
    Ok((bytes, resolved))
}

/// The manifest's wasm layer: the first layer of a module media type.
fn wasm_layer(image: &OciImageManifest) -> Option<&oci_client::manifest::OciDescriptor> {
    image
        .layers
        .iter()
        .find(|l| WASM_LAYERS.contains(&l.media_type.as_str()))
}

fn describe_layers(image: &OciImageManifest) -> String {
    if image.layers.is_empty() {
        return "a manifest without layers".into();
    }
    let types: Vec<&str> = image.layers.iter().map(|l| l.media_type.as_str()).collect();
    format!("layers of types {}", types.join(", "))
}

/// Pushes `module` to `reference` as a CNCF Wasm artifact (config
/// `application/vnd.wasm.config.v0+json`, one `application/wasm` layer) and returns the pushed
/// manifest's digest.
///
/// # Errors
/// The registry refused the push or could not be reached.
pub(super) async fn push(
    client: &Client,
    reference: &Reference,
    auth: &RegistryAuth,
    module: Vec<u8>,
) -> Result<String, PullError> {
    let url = format!("oci://{}", reference.whole());
    let layer_digest = format!("sha256:{:x}", Sha256::digest(&module));
    let config = serde_json::json!({
        "architecture": "wasm",
        "os": "wasip1",
        "layerDigests": [layer_digest],
    });
    let layers = [ImageLayer::new(module, WASM_LAYER.to_owned(), None)];
    let config = Config::new(
        config.to_string().into_bytes(),
        WASM_CONFIG.to_owned(),
        None,
    );
    let failed = |e: oci_client::errors::OciDistributionError| PullError::Unavailable {
        url: url.clone(),
        detail: e.to_string(),
    };
    client
        .push(reference, &layers, config, auth, None)
        .await
        .map_err(failed)?;
    client
        .fetch_manifest_digest(reference, auth)
        .await
        .map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(types: &[&str]) -> OciImageManifest {
        serde_json::from_value(serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": WASM_CONFIG, "digest": format!("sha256:{}", "0".repeat(64)), "size": 2},
            "layers": types.iter().enumerate().map(|(i, t)| serde_json::json!({
                "mediaType": t, "digest": format!("sha256:{}", i.to_string().repeat(64)), "size": 8,
            })).collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    #[test]
    fn the_wasm_layer_is_found_by_media_type() {
        for t in WASM_LAYERS {
            let m = manifest(&["application/vnd.oci.image.layer.v1.tar+gzip", t]);
            assert_eq!(wasm_layer(&m).map(|l| l.media_type.as_str()), Some(t));
        }
        let tar = manifest(&["application/vnd.oci.image.layer.v1.tar+gzip"]);
        assert!(wasm_layer(&tar).is_none());
        assert_eq!(
            describe_layers(&tar),
            "layers of types application/vnd.oci.image.layer.v1.tar+gzip"
        );
        assert_eq!(describe_layers(&manifest(&[])), "a manifest without layers");
    }
}
