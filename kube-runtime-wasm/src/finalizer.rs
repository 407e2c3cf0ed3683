//! Running cleanup before an object is deleted, as kube-runtime 5.0's
//! `kube_runtime::finalizer`.

use crate::controller::Action;
use futures::{TryFuture, TryFutureExt};
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, RemoveOperation, TestOperation};
use kube_core::{Resource, ResourceExt};
use kube_wasm_client::Api;
use kube_wasm_client::api::{Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::error::Error as StdError;
use std::fmt::Debug;
use std::sync::Arc;
use thiserror::Error;

/// The failure of [`finalizer()`], as kube-runtime 5.0's `finalizer::Error`; it carries the
/// reconciler's own error type, so give it a concrete error enum (e.g. from `thiserror`).
#[derive(Debug, Error)]
pub enum Error<ReconcileErr>
where
    ReconcileErr: StdError + 'static,
{
    /// The reconciler failed on [`Event::Apply`].
    #[error("failed to apply object: {0}")]
    ApplyFailed(#[source] ReconcileErr),

    /// The reconciler failed on [`Event::Cleanup`]; the finalizer stays, so the object is
    /// not deleted yet.
    #[error("failed to clean up object: {0}")]
    CleanupFailed(#[source] ReconcileErr),

    /// The JSON patch adding the finalizer failed — e.g. `422` when its `test` found the
    /// finalizers changed in the meantime; the next reconciliation tries again.
    #[error("failed to add finalizer: {0}")]
    AddFinalizer(#[source] kube_wasm_client::Error),

    /// The JSON patch removing the finalizer failed — e.g. `422` when its `test` found
    /// another finalizer at our index.
    #[error("failed to remove finalizer: {0}")]
    RemoveFinalizer(#[source] kube_wasm_client::Error),

    /// The object has no `metadata.name`, so it cannot be patched.
    #[error("object has no name")]
    UnnamedObject,

    /// A JSON pointer of the patch did not parse (cannot happen: they are built here).
    #[error("invalid finalizer")]
    InvalidFinalizer,
}

/// What [`finalizer()`] asks the reconciler to do, as kube-runtime 5.0's
/// `finalizer::Event`. Both must be idempotent: they run again after restarts, failures and
/// changes.
pub enum Event<K> {
    /// Make the world match the object (it carries our finalizer and is not being deleted).
    Apply(Arc<K>),
    /// The object is being deleted: remove what the reconciler made for it. The finalizer
    /// is removed only after this succeeds.
    Cleanup(Arc<K>),
}

/// A JSON pointer, or [`Error::InvalidFinalizer`].
fn pointer<E: StdError + 'static>(path: &str) -> Result<PointerBuf, Error<E>> {
    PointerBuf::parse(path).map_err(|_| Error::InvalidFinalizer)
}

/// Reconciles `obj` behind the finalizer `finalizer_name`, so that cleanup runs before
/// Kubernetes deletes it, as kube-runtime 5.0's `finalizer`. Use it as the whole body of a
/// reconciler.
///
/// By the object's state (`metadata.finalizers`, `metadata.deletionTimestamp`):
///
/// - not deleting, our finalizer absent: adds it with a JSON patch (`test` that
///   `/metadata/finalizers` is still what we saw — `null` when empty — then `add` the
///   finalizer, as a new list or at `/metadata/finalizers/-`) and returns
///   [`Action::await_change`] without calling `reconcile` (the patch triggers the next
///   reconciliation);
/// - not deleting, our finalizer present: `reconcile(Event::Apply(obj))`;
/// - deleting, our finalizer present at index `i`: `reconcile(Event::Cleanup(obj))`, then,
///   if it succeeded, a JSON patch that `test`s `/metadata/finalizers/i` is ours and
///   `remove`s it, and returns the reconciler's action;
/// - deleting without our finalizer: nothing, [`Action::await_change`].
///
/// `finalizer_name` must be unique among the controllers of the object. A watch stream
/// filtered by a predicate must let `deletionTimestamp` changes through.
///
/// # Errors
/// [`Error::ApplyFailed`] / [`Error::CleanupFailed`] with the reconciler's error;
/// [`Error::AddFinalizer`] / [`Error::RemoveFinalizer`] when the patch fails (including a
/// failed `test`, when someone else changed the finalizers); [`Error::UnnamedObject`].
pub async fn finalizer<K, ReconcileFut>(
    api: &Api<K>,
    finalizer_name: &str,
    obj: Arc<K>,
    reconcile: impl FnOnce(Event<K>) -> ReconcileFut,
) -> Result<Action, Error<ReconcileFut::Error>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
    ReconcileFut: TryFuture<Ok = Action>,
    ReconcileFut::Error: StdError + 'static,
{
    let index = obj.finalizers().iter().position(|f| f == finalizer_name);
    let deleting = obj.meta().deletion_timestamp.is_some();
    match (index, deleting) {
        (Some(_), false) => TryFutureExt::into_future(reconcile(Event::Apply(obj)))
            .await
            .map_err(Error::ApplyFailed),
        (Some(index), true) => {
            let name = obj.meta().name.clone().ok_or(Error::UnnamedObject)?;
            let action = TryFutureExt::into_future(reconcile(Event::Cleanup(obj)))
                .await
                .map_err(Error::CleanupFailed)?;
            let path = format!("/metadata/finalizers/{index}");
            // The index is only ours if nobody removed an earlier finalizer meanwhile:
            // `test` makes the patch fail rather than remove another controller's entry.
            let patch = json_patch::Patch(vec![
                PatchOperation::Test(TestOperation {
                    path: pointer(&path)?,
                    value: Value::from(finalizer_name),
                }),
                PatchOperation::Remove(RemoveOperation {
                    path: pointer(&path)?,
                }),
            ]);
            api.patch::<K>(&name, &PatchParams::default(), &Patch::Json(patch))
                .await
                .map_err(Error::RemoveFinalizer)?;
            Ok(action)
        }
        (None, false) => {
            let name = obj.meta().name.as_deref().ok_or(Error::UnnamedObject)?;
            let existing = obj.finalizers();
            // Kubernetes keeps duplicate finalizers, so the patch fails (and the next
            // reconciliation retries) if the list changed since we read it.
            let operations = if existing.is_empty() {
                vec![
                    PatchOperation::Test(TestOperation {
                        path: pointer("/metadata/finalizers")?,
                        value: Value::Null,
                    }),
                    PatchOperation::Add(AddOperation {
                        path: pointer("/metadata/finalizers")?,
                        value: Value::from(vec![finalizer_name]),
                    }),
                ]
            } else {
                vec![
                    PatchOperation::Test(TestOperation {
                        path: pointer("/metadata/finalizers")?,
                        value: Value::from(existing),
                    }),
                    PatchOperation::Add(AddOperation {
                        path: pointer("/metadata/finalizers/-")?,
                        value: Value::from(finalizer_name),
                    }),
                ]
            };
            api.patch::<K>(
                name,
                &PatchParams::default(),
                &Patch::Json(json_patch::Patch(operations)),
            )
            .await
            .map_err(Error::AddFinalizer)?;
            Ok(Action::await_change())
        }
        (None, true) => Ok(Action::await_change()),
    }
}
