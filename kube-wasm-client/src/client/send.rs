//! The one path every HTTP request takes: an `http::Request<Vec<u8>>` (as kube-core's
//! request builders make it) becomes an ABI `http_request` envelope, is submitted to the
//! host as an [`Op`], and its `response` completion comes back.

use super::Client;
use super::host_error::{Phase, from_op_error, protocol_violation};
use crate::{Error, Result};
use kube_wasm_abi::{Completion, HttpRequest, ResponseMode};
use kube_wasm_guest::Op;

/// A whole response: status and body. (Response headers are not needed by any kube API.)
#[derive(Debug)]
pub(crate) struct WholeResponse {
    /// The HTTP status.
    pub status: http::StatusCode,
    /// The response body.
    pub body: Vec<u8>,
}

impl Client {
    /// Turns `request` into the envelope the host expects: method, path and query (scheme
    /// and authority, if any, are dropped — the host sends to its own API server), the
    /// request's headers followed by the [`Config`](crate::Config)'s extra headers, and the
    /// body.
    ///
    /// # Errors
    /// [`Error::BuildRequest`] if a header value is not UTF-8 (the ABI carries headers as
    /// text).
    pub(crate) fn envelope(
        &self,
        request: http::Request<Vec<u8>>,
        response: ResponseMode,
    ) -> Result<(HttpRequest, Vec<u8>)> {
        let (parts, body) = request.into_parts();
        let uri = match parts.uri.path_and_query().map(|pq| pq.as_str()) {
            Some(pq) if pq.starts_with('/') => pq.to_string(),
            Some(pq) => format!("/{pq}"),
            None => "/".to_string(),
        };
        let mut headers = Vec::with_capacity(parts.headers.len() + self.extra_headers.len());
        for (name, value) in &parts.headers {
            headers.push((name.as_str().to_string(), header_text(name, value)?));
        }
        headers.extend(self.extra_headers.iter().cloned());
        Ok((
            HttpRequest {
                method: parts.method.as_str().to_string(),
                uri,
                headers,
                response,
            },
            body,
        ))
    }

    /// Submits `request` to the host. The returned [`Op`] owns it: dropping the op before
    /// its final completion cancels the request on the host.
    pub(crate) fn submit(
        &self,
        request: http::Request<Vec<u8>>,
        response: ResponseMode,
    ) -> Result<Op> {
        let (envelope, body) = self.envelope(request, response)?;
        Ok(Op::http(&envelope, &body))
    }

    /// Sends `request` and waits for the whole response, whatever its status.
    ///
    /// Dropping the future cancels the request on the host.
    ///
    /// # Errors
    /// The host's failure, mapped by `host_error` ([`Error::Service`] and friends), or
    /// [`Error::BuildRequest`] from [`Client::envelope`].
    pub(crate) async fn send_whole(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<WholeResponse> {
        let mut op = self.submit(request, ResponseMode::Whole)?;
        let Some(delivery) = op.next_delivery().await else {
            return Err(protocol_violation("the request ended without a response"));
        };
        match delivery.completion {
            Completion::Response { status, .. } => Ok(WholeResponse {
                status: status_code(status)?,
                body: delivery.into_body(),
            }),
            Completion::Error(error) => Err(from_op_error(error, Phase::Request)),
            other => Err(protocol_violation(format_args!(
                "{other:?} for a whole-body request"
            ))),
        }
    }
}

/// A header value as text, or [`Error::BuildRequest`].
pub(crate) fn header_text(name: &http::HeaderName, value: &http::HeaderValue) -> Result<String> {
    value.to_str().map(str::to_string).map_err(|_| {
        Error::BuildRequest(kube_core::request::Error::Validation(format!(
            "header {name} is not valid UTF-8 text, which the kube-wasm ABI requires"
        )))
    })
}

/// The status the host reported, or a protocol violation if it is not an HTTP status.
pub(crate) fn status_code(status: u16) -> Result<http::StatusCode> {
    http::StatusCode::from_u16(status)
        .map_err(|_| protocol_violation(format_args!("HTTP status {status}")))
}
