//! Whole-body requests: [`Client::request`], [`Client::request_text`] and
//! [`Client::request_status`], as in kube 5.0.

use super::Client;
use super::api_errors::check_status;
use crate::{Error, Result};
use either::Either;
use kube_core::Status;
use serde::de::DeserializeOwned;

/// The target kube-client's own log lines carry (its `client` module's path), so a guest's
/// logs read and filter as a native program's.
const LOG_TARGET: &str = "kube_client::client";

/// Parses `text` as a `T`; on failure logs the body and the error as kube-client does (a
/// `WARN` of `"{body}, {error:?}"`) and returns [`Error::SerdeError`].
fn parse<T: DeserializeOwned>(text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| {
        tracing::warn!(target: LOG_TARGET, "{}, {:?}", text, e);
        Error::SerdeError(e)
    })
}

impl Client {
    /// Performs a Kubernetes API request and deserialises the response body as `T`.
    ///
    /// Use it for requests kube-core's `Request` builders make (or any `http::Request` with
    /// a path relative to the API server root). Dropping the future cancels the request.
    ///
    /// # Errors
    /// As [`Client::request_text`], plus [`Error::SerdeError`] if the body is not a `T`
    /// (logged as kube-client logs it: a `WARN` from target `kube_client::client` with the
    /// body and the error).
    pub async fn request<T>(&self, request: http::Request<Vec<u8>>) -> Result<T>
    where
        T: DeserializeOwned,
    {
        let text = self.request_text(request).await?;
        parse(&text)
    }

    /// Performs a Kubernetes API request and returns the response body as text.
    ///
    /// # Errors
    /// [`Error::Api`] for a 4xx/5xx response (see the crate docs for how the `Status` is
    /// made), [`Error::FromUtf8`] for a body that is not UTF-8, and the host's failures
    /// ([`Error::Service`], [`Error::BuildRequest`], …).
    pub async fn request_text(&self, request: http::Request<Vec<u8>>) -> Result<String> {
        let response = self.send_whole(request).await?;
        check_status(response.status, &response.body)?;
        String::from_utf8(response.body).map_err(Error::FromUtf8)
    }

    /// Performs a Kubernetes API request that may answer with either a `T` or a `Status`
    /// (deletes do): `Right(Status)` if the body's `kind` is `"Status"`, else `Left(T)`.
    ///
    /// # Errors
    /// As [`Client::request_text`], plus [`Error::SerdeError`] if the body is not JSON or
    /// not the `T` or `Status` its `kind` says.
    pub async fn request_status<T>(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<Either<T, Status>>
    where
        T: DeserializeOwned,
    {
        let text = self.request_text(request).await?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(Error::SerdeError)?;
        if value["kind"] == "Status" {
            tracing::trace!(target: LOG_TARGET, "Status from {}", text);
            parse(&text).map(Either::Right)
        } else {
            parse(&text).map(Either::Left)
        }
    }
}
