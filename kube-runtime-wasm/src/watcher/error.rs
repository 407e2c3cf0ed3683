//! The watcher's errors, as `kube_runtime::watcher::Error`.

use kube_wasm_client::error::Status;
use thiserror::Error;

/// A failure the watcher reports as an `Err` item of its stream, as kube-runtime 5.0's
/// `watcher::Error`. The stream goes on after every error; back off between them with
/// [`WatchStreamExt::default_backoff`](crate::WatchStreamExt::default_backoff).
#[derive(Debug, Error)]
pub enum Error {
    /// The LIST of the initial (or a re-) listing failed; the next poll starts the listing
    /// again from its first page.
    #[error("failed to perform initial object list: {0}")]
    InitialListFailed(#[source] kube_wasm_client::Error),

    /// Starting the WATCH failed (the API server refused it, or the host could not reach
    /// it). The next poll retries from the same `resourceVersion`, except after `410 Gone`,
    /// where it relists.
    #[error("failed to start watching object: {0}")]
    WatchStartFailed(#[source] kube_wasm_client::Error),

    /// The API server sent an `ERROR` watch event. After `410 Gone` (the `resourceVersion` is
    /// too old) the next poll relists; otherwise the watch goes on.
    #[error("error returned by apiserver during watch: {0}")]
    WatchError(#[source] Box<Status>),

    /// The watch stream yielded an error (it broke off, or an event did not decode).
    #[error("watch stream failed: {0}")]
    WatchFailed(#[source] kube_wasm_client::Error),

    /// A list or watch result had no `metadata.resourceVersion` (the resource may not
    /// support watch); the next poll relists.
    #[error("no metadata.resourceVersion in watch result (does resource support watch?)")]
    NoResourceVersion,
}

/// `Result` with the watcher's [`enum@Error`], as `kube_runtime::watcher::Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
