//! `host-shim push`: publishes a `.wasm` as an OCI artifact with one `application/wasm` layer
//! and the wasm config media type (the CNCF wasm OCI artifact layout, as wkg pushes it).

use oci_client::Reference;
use oci_client::client::{Config, ImageLayer};
use oci_client::secrets::RegistryAuth;

#[cfg(doc)]
use super::PUSHED_LAYER_MEDIA_TYPE;
use super::store::Digest;
use super::{RegistrySettings, WASM_CONFIG_MEDIA_TYPE};

/// Pushes `wasm` to `reference` (a tag) as one layer of `layer_media_type` (normally
/// [`PUSHED_LAYER_MEDIA_TYPE`]) with `auth`; returns the pushed manifest's reference pinned by
/// digest (`registry/repository@sha256:…`).
///
/// # Errors
/// If `wasm` is not a wasm module, the reference does not parse, or the registry refuses.
pub async fn push(
    settings: &RegistrySettings,
    wasm: Vec<u8>,
    reference: &str,
    layer_media_type: &str,
    auth: &RegistryAuth,
) -> anyhow::Result<String> {
    anyhow::ensure!(
        wasm.starts_with(b"\0asm"),
        "not a wasm module (no `\\0asm` magic)"
    );
    let parsed: Reference = reference
        .parse()
        .map_err(|e| anyhow::anyhow!("{reference:?} is not an image reference: {e}"))?;
    let config = serde_json::json!({
        "architecture": "wasm",
        "os": "wasip1",
        "layerDigests": [Digest::of(&wasm).as_str()],
    });
    let layer = ImageLayer::new(wasm, layer_media_type.to_owned(), None);
    let config = Config::new(
        serde_json::to_vec(&config)?,
        WASM_CONFIG_MEDIA_TYPE.to_owned(),
        None,
    );
    let client = settings.client();
    client.push(&parsed, &[layer], config, auth, None).await?;
    let digest = client.fetch_manifest_digest(&parsed, auth).await?;
    Ok(Reference::with_digest(
        parsed.registry().to_owned(),
        parsed.repository().to_owned(),
        digest,
    )
    .whole())
}
