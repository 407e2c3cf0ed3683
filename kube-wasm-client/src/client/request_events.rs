//! [`Client::request_events`]: an arbitrary streaming request read as watch events.

use super::Client;
use super::events::{EventSource, EventStream, await_head};
use crate::Result;
use futures::TryStream;
use kube_core::WatchEvent;
use kube_wasm_abi::ResponseMode;
use serde::de::DeserializeOwned;

impl Client {
    /// Performs a streaming request (e.g. kube-core's `Request::watch`) and reads its body
    /// as newline-delimited watch events, as kube 5.0.
    ///
    /// The request goes to the host in `lines` mode. The future resolves once the host has
    /// the response head: a 2xx status gives the stream, anything else an error. The stream
    /// yields one item per line as described for kube's: events as `Ok`, `Status` lines as
    /// `Err(Error::Api)`, other undecodable lines as `Err(Error::SerdeError)`; it ends when
    /// the body ends, or after one `Err(Error::ReadEvents)` if the body broke off. As in
    /// kube, `accept-encoding: identity` is added unless the request sets it.
    ///
    /// Dropping the future or the stream early cancels the request on the host.
    ///
    /// `Api::watch` does not use this: it sends a `watch` op, which lets the host see the
    /// resource and parameters.
    ///
    /// # Errors
    /// [`Error::Api`](crate::Error::Api) for a 4xx/5xx response, and the host's failures.
    pub async fn request_events<T>(
        &self,
        mut request: http::Request<Vec<u8>>,
    ) -> Result<impl TryStream<Item = Result<WatchEvent<T>>> + use<T>>
    where
        T: Clone + DeserializeOwned,
    {
        request
            .headers_mut()
            .entry(http::header::ACCEPT_ENCODING)
            .or_insert(http::HeaderValue::from_static("identity"));
        let op = self.submit(request, ResponseMode::Lines)?;
        let op = await_head(op, "lines-mode request").await?;
        Ok(EventStream::<T>::new(op, EventSource::Lines))
    }
}
