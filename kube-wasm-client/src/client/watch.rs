//! Starting a `watch` op: kube-core's `WatchParams` and a resourceVersion, as the ABI's
//! watch envelope.

use super::Client;
use super::events::{EventSource, EventStream, await_head};
use crate::Result;
use kube_core::params::WatchParams;
use kube_wasm_abi::WatchRequest;
use kube_wasm_guest::Op;

impl Client {
    /// Starts a watch of the collection at `path` (a `Request::url_path`, no query) from
    /// `version`, asking for `PartialObjectMetadata` when `metadata_only`, and returns its
    /// event stream once the host reports the watch established (its `head`), as kube 5.0's
    /// `Api::watch` resolves once the API server answered.
    ///
    /// # Errors
    /// [`Error::Api`](crate::Error::Api) if the API server refused the watch (403, 404, …),
    /// and the host's failures to reach it, as for any request.
    ///
    /// The envelope carries `wp` field by field, so the host builds the same query kube-core
    /// would (`timeoutSeconds` 290 when `wp.timeout` is `None`). The caller validates `wp`
    /// first with kube-core's builder. The config's extra headers do not apply: a watch
    /// envelope has no headers.
    pub(crate) async fn watch_events<T>(
        &self,
        path: &str,
        wp: &WatchParams,
        version: &str,
        metadata_only: bool,
    ) -> Result<EventStream<T>> {
        let request = WatchRequest {
            path: self.base_path.join(Some(path)),
            label_selector: wp.label_selector.clone(),
            field_selector: wp.field_selector.clone(),
            timeout_seconds: wp.timeout,
            bookmarks: wp.bookmarks,
            send_initial_events: wp.send_initial_events,
            resource_version: version.to_string(),
            metadata_only,
        };
        let op = await_head(Op::watch(&request), "watch").await?;
        Ok(EventStream::new(op, EventSource::Watch))
    }
}
