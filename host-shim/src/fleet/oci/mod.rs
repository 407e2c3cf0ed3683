//! Modules from OCI registries: a module published as an OCI artifact with one wasm layer, as
//! wkg, wasm-to-oci, Kubewarden and Spin push them, is pulled with `oci-client` ([`pull`]):
//! its tag resolved to a digest once, the manifest and layer checked against their digests,
//! and the wasm kept by digest in a content-addressed [`store`]. Registry credentials come from
//! dockerconfigjson pull secrets ([`pull_secret`]) and never reach a guest. [`push`] publishes
//! a `.wasm` for authors (`host-shim push`).

pub mod pull;
pub mod pull_secret;
pub mod push;
pub mod store;

/// The layer media types of a wasm module the host pulls: the CNCF wasm OCI artifact's
/// `application/wasm` (wkg, and what `host-shim push` writes), and the older
/// `application/vnd.wasm.content.layer.v1+wasm` (wasm-to-oci, Kubewarden, Spin) and
/// `application/vnd.module.wasm.content.layer.v1+wasm` (Krustlet, wasmCloud).
pub const WASM_LAYER_MEDIA_TYPES: &[&str] = &[
    "application/wasm",
    "application/vnd.wasm.content.layer.v1+wasm",
    "application/vnd.module.wasm.content.layer.v1+wasm",
];

/// The config media type `host-shim push` writes (the CNCF wasm OCI artifact's).
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";

/// The media type of the layer `host-shim push` writes.
pub const PUSHED_LAYER_MEDIA_TYPE: &str = "application/wasm";

/// How the host reaches registries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrySettings {
    /// Registries (`host[:port]`) spoken to over plain HTTP; every other one over HTTPS.
    pub insecure: Vec<String>,
}

impl RegistrySettings {
    /// An `oci-client` client for these settings. TLS is rustls with the ring provider (kube's
    /// too), installed as the process default if none is.
    pub fn client(&self) -> oci_client::Client {
        // Fails only if a provider is installed already, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let protocol = if self.insecure.is_empty() {
            oci_client::client::ClientProtocol::Https
        } else {
            oci_client::client::ClientProtocol::HttpsExcept(self.insecure.clone())
        };
        oci_client::Client::new(oci_client::client::ClientConfig {
            protocol,
            ..Default::default()
        })
    }
}
