//! Pulling a module: resolve the reference to a digest, fetch the manifest and its one wasm
//! layer (oci-client checks both against their digests), check the bytes are wasm, and keep
//! them in the [`ModuleStore`] by the manifest's digest.

use std::sync::{Arc, OnceLock};

use oci_client::Reference;
use oci_client::secrets::RegistryAuth;

use super::store::{Digest, ModuleStore};
use super::{RegistrySettings, WASM_LAYER_MEDIA_TYPES};

/// A module pulled and stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    /// The reference pinned to what was pulled: `registry/repository@sha256:…`.
    pub pinned: String,
    /// The manifest's digest (what a tag resolved to).
    pub digest: Digest,
    /// The stored `.wasm` file.
    pub path: std::path::PathBuf,
}

/// Why a module could not be pulled. [`PullError::is_retriable`] says whether trying again
/// later can help.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The reference does not parse.
    #[error("{reference:?} is not an image reference: {reason}")]
    BadReference {
        /// The reference as given.
        reference: String,
        /// Why it does not parse.
        reason: String,
    },
    /// The registry could not be reached or refused (network, authentication, not found).
    #[error("pulling {reference}: {source}")]
    Registry {
        /// The reference.
        reference: String,
        /// oci-client's error (including digest mismatches it detected).
        #[source]
        source: oci_client::errors::OciDistributionError,
    },
    /// The artifact is not one wasm module: no layer, several, or a layer of another media
    /// type (a container image).
    #[error("{reference} is not a wasm module: {reason}")]
    NotWasm {
        /// The reference.
        reference: String,
        /// What it holds instead.
        reason: String,
    },
    /// The pulled bytes do not match the digest (a registry that lies, or a digest pinned
    /// in the reference that differs from the content).
    #[error("{reference}: digest mismatch: {reason}")]
    DigestMismatch {
        /// The reference.
        reference: String,
        /// Which digests differ.
        reason: String,
    },
    /// The store could not be written.
    #[error("storing {reference}: {source}")]
    Store {
        /// The reference.
        reference: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl PullError {
    /// Whether a retry (with back-off) can help: a registry that did not answer, or a store
    /// that could not be written, may recover; a bad reference, content that is not wasm or a
    /// digest mismatch will not.
    pub fn is_retriable(&self) -> bool {
        match self {
            PullError::Registry { source, .. } => !is_digest_error(source),
            PullError::Store { .. } => true,
            PullError::BadReference { .. }
            | PullError::NotWasm { .. }
            | PullError::DigestMismatch { .. } => false,
        }
    }
}

fn is_digest_error(err: &oci_client::errors::OciDistributionError) -> bool {
    matches!(
        err,
        oci_client::errors::OciDistributionError::DigestError(_)
    )
}

/// Pulls modules into a store. Clones share one registry client, made at the first pull: a
/// host whose modules are all files never holds one (its TLS roots, session cache and HTTP
/// client: about 130 KiB of heap).
#[derive(Clone)]
pub struct Puller {
    settings: RegistrySettings,
    client: Arc<OnceLock<oci_client::Client>>,
    store: ModuleStore,
}

impl std::fmt::Debug for Puller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Puller")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl Puller {
    /// A puller reaching registries as `settings` say, storing into `store`.
    pub fn new(settings: &RegistrySettings, store: ModuleStore) -> Self {
        Self {
            settings: settings.clone(),
            client: Arc::default(),
            store,
        }
    }

    fn client(&self) -> &oci_client::Client {
        self.client.get_or_init(|| self.settings.client())
    }

    /// The store.
    pub fn store(&self) -> &ModuleStore {
        &self.store
    }

    /// Pulls `reference` (by tag or digest) with `auth`: resolves it to the manifest's digest
    /// (one request when the module is already stored), then fetches the manifest and its
    /// layer, each checked against its digest, and stores the wasm.
    ///
    /// # Errors
    /// [`PullError`].
    pub async fn pull(&self, reference: &str, auth: &RegistryAuth) -> Result<Pulled, PullError> {
        let parsed: Reference =
            reference
                .parse()
                .map_err(|e: oci_client::ParseError| PullError::BadReference {
                    reference: reference.to_owned(),
                    reason: e.to_string(),
                })?;
        let registry_error = |source| PullError::Registry {
            reference: reference.to_owned(),
            source,
        };
        let resolved = self
            .client()
            .fetch_manifest_digest(&parsed, auth)
            .await
            .map_err(registry_error)?;
        let digest = Digest::parse(&resolved).map_err(|e| PullError::DigestMismatch {
            reference: reference.to_owned(),
            reason: e.to_string(),
        })?;
        if let Some(pinned) = parsed.digest()
            && pinned != digest.as_str()
        {
            return Err(PullError::DigestMismatch {
                reference: reference.to_owned(),
                reason: format!("the registry serves {digest} for {pinned}"),
            });
        }
        let pinned = Reference::with_digest(
            parsed.registry().to_owned(),
            parsed.repository().to_owned(),
            digest.to_string(),
        );
        let pinned_text = pinned.whole();
        if let Some(path) = self.store.get(&digest) {
            return Ok(Pulled {
                pinned: pinned_text,
                digest,
                path,
            });
        }
        let image = self
            .client()
            .pull(&pinned, auth, WASM_LAYER_MEDIA_TYPES.to_vec())
            .await
            .map_err(|source| {
                if is_digest_error(&source) {
                    PullError::DigestMismatch {
                        reference: reference.to_owned(),
                        reason: source.to_string(),
                    }
                } else if matches!(
                    source,
                    oci_client::errors::OciDistributionError::IncompatibleLayerMediaTypeError(_)
                ) {
                    PullError::NotWasm {
                        reference: reference.to_owned(),
                        reason: source.to_string(),
                    }
                } else {
                    registry_error(source)
                }
            })?;
        let wasm = match image.layers.as_slice() {
            [layer] => &layer.data,
            layers => {
                return Err(PullError::NotWasm {
                    reference: reference.to_owned(),
                    reason: format!("{} layers, where a module has one", layers.len()),
                });
            }
        };
        if !wasm.starts_with(b"\0asm") {
            return Err(PullError::NotWasm {
                reference: reference.to_owned(),
                reason: "its layer does not start with the wasm magic `\\0asm`".into(),
            });
        }
        let path = self
            .store
            .insert(&digest, wasm)
            .map_err(|source| PullError::Store {
                reference: reference.to_owned(),
                source,
            })?;
        tracing::info!(%reference, %digest, bytes = wasm.len(), "pulled a module");
        Ok(Pulled {
            pinned: pinned_text,
            digest,
            path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_registry_client_is_made_at_the_first_pull_and_shared_by_clones() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Nothing listens on the discard port of loopback: the pull fails at once.
        let registry = "127.0.0.1:9";
        let settings = RegistrySettings {
            insecure: vec![registry.to_owned()],
        };
        let puller = Puller::new(&settings, ModuleStore::new(dir.path()));
        let clone = puller.clone();
        assert!(puller.client.get().is_none(), "no client before a pull");

        let pulled = puller
            .pull(&format!("{registry}/module:1"), &RegistryAuth::Anonymous)
            .await;
        assert!(
            matches!(pulled, Err(PullError::Registry { .. })),
            "{pulled:?}"
        );
        assert!(
            clone.client.get().is_some(),
            "the clone has the client made"
        );
    }
}
