//! The one path every HTTP request takes: an `http::Request<Vec<u8>>` (as kube-core's
//! request builders make it) becomes an ABI `http_request` envelope, is submitted to the
//! host as an [`Op`], and its `response` completion comes back; and [`Client::send`], the
//! raw `http::Request<Body>` → `http::Response<Body>` path on top of it.

use super::Client;
use super::body::Body;
use super::host_error::{Phase, from_op_error, protocol_violation};
use crate::{Error, Result};
use kube_wasm_abi::{Completion, HttpRequest, ResponseMode};
use kube_wasm_guest::Op;

/// A whole response: status, headers (as the ABI carries them) and body.
#[derive(Debug)]
pub(crate) struct WholeResponse {
    /// The HTTP status.
    pub status: http::StatusCode,
    /// The response headers, `(name, value)` in the order the host sent them.
    pub headers: Vec<(String, String)>,
    /// The response body.
    pub body: Vec<u8>,
}

impl Client {
    /// Turns `request` into the envelope the host expects: method, path and query (after the
    /// client's base path; scheme and authority, if any, are dropped — the host sends to its
    /// own API server), the
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
        let uri = self
            .base_path
            .join(parts.uri.path_and_query().map(|pq| pq.as_str()));
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
        let Some(mut delivery) = op.next_delivery().await else {
            return Err(protocol_violation("the request ended without a response"));
        };
        if let Completion::Response { status, headers } = &mut delivery.completion {
            let status = status_code(*status)?;
            let headers = std::mem::take(headers);
            return Ok(WholeResponse {
                status,
                headers,
                body: delivery.into_body(),
            });
        }
        match delivery.completion {
            Completion::Error(error) => Err(from_op_error(error, Phase::Request)),
            other => Err(protocol_violation(format_args!(
                "{other:?} for a whole-body request"
            ))),
        }
    }
}

impl Client {
    /// Performs a raw HTTP request against the API server and returns the raw response, as
    /// kube 5.0's `Client::send`: the request goes out as it is (a path relative to the API
    /// server root; scheme and authority, if any, are ignored, as kube replaces them with
    /// the cluster URL), with the [`Config`](crate::Config)'s extra headers added, and the
    /// host authenticates it.
    ///
    /// As in kube, the response comes back whatever its status: a 404 or a 500 is an `Ok`
    /// response carrying the server's status, headers and body, not an
    /// [`Error::Api`] (that check is [`Client::request`]'s). Its headers are those the host
    /// received (a value that is not UTF-8 arrives with its invalid bytes replaced, as the
    /// ABI carries headers as text), its version is HTTP/1.1.
    ///
    /// One difference, from the ABI carrying whole bodies: the future resolves once the host
    /// has read the whole response body (kube's resolves at the response head and streams
    /// the body), so it suits requests whose answer ends — not watches or followed logs
    /// (use [`Client::request_events`] or [`Client::request_stream`] for those). Dropping the
    /// future cancels the request on the host.
    ///
    /// # Errors
    /// The host's failures ([`Error::Service`] when the API server could not be reached, did
    /// not answer in time, or the body broke off — kube reports the last from reading the
    /// body, also as `Service`; [`Error::LinesCodecMaxLineLengthExceeded`] for a body over
    /// the host's 512 MiB limit); [`Error::BuildRequest`] for a header value that is not
    /// UTF-8 text or a request the host cannot build.
    pub async fn send(&self, request: http::Request<Body>) -> Result<http::Response<Body>> {
        let (parts, mut body) = request.into_parts();
        let request = http::Request::from_parts(parts, body.take_bytes().to_vec());
        let response = self.send_whole(request).await?;
        let mut headers = http::HeaderMap::with_capacity(response.headers.len());
        for (name, value) in &response.headers {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| protocol_violation(format_args!("response header name {name:?}")))?;
            let value = http::HeaderValue::from_str(value).map_err(|_| {
                protocol_violation(format_args!("value {value:?} of response header {name}"))
            })?;
            headers.append(name, value);
        }
        let mut out = http::Response::new(Body::response(response.body));
        *out.status_mut() = response.status;
        *out.headers_mut() = headers;
        Ok(out)
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
