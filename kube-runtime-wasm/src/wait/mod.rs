//! Waits for an object to reach a state, as kube-runtime 5.0's `kube_runtime::wait`.
//!
//! [`await_condition`] watches one named object (with
//! [`crate::watcher::watch_object`]) until a [`Condition`] holds for it;
//! [`conditions`] has kube's ready-made conditions and [`delete::delete_and_finalize`]
//! deletes an object and waits until it is gone.

pub mod conditions;
pub mod delete;

use crate::watcher::{self, watch_object};
use futures::TryStreamExt;
use kube_core::Resource;
use kube_wasm_client::Api;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use thiserror::Error;

/// The failure of [`await_condition`], as kube-runtime 5.0's `wait::Error`.
#[derive(Debug, Error)]
pub enum Error {
    /// The watcher of the object failed (its LIST or WATCH was refused or broke off) before
    /// the condition held. There is no retry: call [`await_condition`] again to go on.
    #[error("failed to probe for whether the condition is fulfilled yet: {0}")]
    ProbeFailed(#[source] watcher::Error),
}

/// Watches the object `name` of `api` until `cond` holds for it, and returns the object as
/// it was then (`None` when the condition held for an absent object), as kube-runtime
/// 5.0's `await_condition`.
///
/// `cond` sees `Some(object)` whenever the object is listed or changes, and `None` when it
/// is deleted or absent. A condition that already holds resolves at the first look, after
/// the initial LIST.
///
/// There is no timeout: the condition may depend on something that never happens. Bound the
/// wait with `tokio::time::timeout` (kube-wasm-tokio's, a host timer) when needed.
///
/// # Errors
/// [`Error::ProbeFailed`] at the watcher's first error — the type is unknown to the API
/// server, or `api` may not `list` and `watch` it. A missing object is not an error.
///
/// ```no_run
/// use k8s_openapi::api::core::v1::Pod;
/// use kube_runtime_wasm::wait::{await_condition, conditions};
/// use kube_wasm_client::{Api, Client};
///
/// # async fn run(client: Client) -> Result<(), Box<dyn std::error::Error>> {
/// let pods: Api<Pod> = Api::default_namespaced(client);
/// let running = await_condition(pods, "web-0", conditions::is_pod_running()).await?;
/// println!("running: {:?}", running.and_then(|pod| pod.metadata.name));
/// # Ok(())
/// # }
/// ```
pub async fn await_condition<K>(
    api: Api<K>,
    name: &str,
    cond: impl Condition<K>,
) -> Result<Option<K>, Error>
where
    K: Clone + Debug + Send + DeserializeOwned + Resource + 'static,
{
    let mut states = std::pin::pin!(watch_object(api, name));
    loop {
        match states.try_next().await.map_err(Error::ProbeFailed)? {
            Some(state) if cond.matches_object(state.as_ref()) => return Ok(state),
            Some(_) => {}
            None => unreachable!("a watcher stream never ends"),
        }
    }
}

/// A test of an object's state for [`await_condition`], as kube-runtime 5.0's
/// `wait::Condition`: `None` stands for an absent (or deleted) object.
///
/// Every `Fn(Option<&K>) -> bool` is a condition; [`not`](Condition::not),
/// [`and`](Condition::and) and [`or`](Condition::or) combine them.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kube_runtime_wasm::wait::Condition;
///
/// fn has_ip() -> impl Condition<Pod> {
///     |pod: Option<&Pod>| {
///         pod.and_then(|p| p.status.as_ref()).and_then(|s| s.pod_ip.as_ref()).is_some()
///     }
/// }
/// assert!(!has_ip().matches_object(None));
/// assert!(has_ip().not().matches_object(None));
/// ```
pub trait Condition<K> {
    /// Whether the condition holds for `obj` (`None`: the object does not exist).
    fn matches_object(&self, obj: Option<&K>) -> bool;

    /// A condition that holds exactly when `self` does not.
    fn not(self) -> conditions::Not<Self>
    where
        Self: Sized,
    {
        conditions::Not(self)
    }

    /// A condition that holds when both `self` and `other` do.
    fn and<Other: Condition<K>>(self, other: Other) -> conditions::And<Self, Other>
    where
        Self: Sized,
    {
        conditions::And(self, other)
    }

    /// A condition that holds when `self` or `other` (or both) does.
    fn or<Other: Condition<K>>(self, other: Other) -> conditions::Or<Self, Other>
    where
        Self: Sized,
    {
        conditions::Or(self, other)
    }
}

impl<K, F: Fn(Option<&K>) -> bool> Condition<K> for F {
    fn matches_object(&self, obj: Option<&K>) -> bool {
        self(obj)
    }
}
