//! Why a reconcile of a WasmController failed.

/// Why a reconcile failed; the controller retries it after a while
/// (`reconcile::error_policy`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused a write (status, finalizer).
    #[error("{0}")]
    Kube(#[from] kube::Error),
    /// The finalizer machinery failed.
    #[error("finalizer: {0}")]
    Finalizer(String),
}
