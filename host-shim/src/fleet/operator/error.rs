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
    /// The finalizers changed while this replica added its own: another replica held the
    /// claim a moment ago and added it first. Tried again at once (after the claim is settled
    /// again).
    #[error("the finalizers changed meanwhile: {0}")]
    FinalizerRace(String),
}
