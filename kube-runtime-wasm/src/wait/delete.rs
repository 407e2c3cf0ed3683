//! Deleting an object and waiting until it is gone, as kube-runtime 5.0's
//! `kube_runtime::wait::delete`.

use super::{await_condition, conditions};
use kube_core::Resource;
use kube_wasm_client::Api;
use kube_wasm_client::api::DeleteParams;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use thiserror::Error;

/// The failure of [`delete_and_finalize`], as kube-runtime 5.0's `wait::delete::Error`.
#[derive(Debug, Error)]
pub enum Error {
    /// The DELETE answer (the object being deleted, or a `Status`) carried no uid to wait
    /// on.
    #[error("deleted object has no UID to wait for")]
    NoUid,

    /// The DELETE request failed (e.g. `404` when there is no such object).
    #[error("failed to delete object: {0}")]
    Delete(#[source] kube_wasm_client::Error),

    /// Waiting for the object to disappear failed (see [`enum@super::Error`]).
    #[error("failed to wait for object to be deleted: {0}")]
    Await(#[source] super::Error),
}

/// Deletes the object `name` of `api` with `delete_params` and waits until it is gone —
/// its finalizers all removed — as kube-runtime 5.0's `delete_and_finalize`.
///
/// The wait is [`await_condition`] with [`conditions::is_deleted`] on the uid the DELETE
/// answered, so an object recreated under the same name in the meantime counts as gone.
/// There is no timeout.
///
/// # Errors
/// [`Error::Delete`] if the DELETE fails, [`Error::NoUid`] if its answer has no uid, and
/// [`Error::Await`] if the watch fails while waiting.
pub async fn delete_and_finalize<
    K: Clone + Debug + Send + DeserializeOwned + Resource + 'static,
>(
    api: Api<K>,
    name: &str,
    delete_params: &DeleteParams,
) -> Result<(), Error> {
    let answer = api
        .delete(name, delete_params)
        .await
        .map_err(Error::Delete)?;
    let uid = answer
        .either(
            |object| object.meta().uid.clone(),
            |status| status.details.map(|details| details.uid),
        )
        .ok_or(Error::NoUid)?;
    await_condition(api, name, conditions::is_deleted(&uid))
        .await
        .map_err(Error::Await)?;
    Ok(())
}
