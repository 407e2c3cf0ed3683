//! [`Client::request_stream`]: an arbitrary request whose response body is read as a byte
//! stream, as kube 5.0's.

use super::Client;
use super::body_reader::BodyReader;
use super::events::await_head;
use crate::Result;
use futures::io::AsyncBufRead;
use kube_wasm_abi::ResponseMode;

impl Client {
    /// Performs a request and streams its response body, as kube 5.0's
    /// `Client::request_stream`: read it with `futures`' `AsyncReadExt` / `AsyncBufReadExt`
    /// (e.g. `.lines()`).
    ///
    /// The request goes to the host in `lines` mode: the future resolves once the host has
    /// the response head, and the body then arrives line by line as the server sends it
    /// (so a followed log streams). The bytes read are the body's, with one caveat: a body
    /// whose last line has no trailing `\n` reads with one added (the ABI cannot tell an
    /// unterminated last line from a terminated one). A body that breaks off is an
    /// `io::Error` of kind `Other` wrapping the host's [`kube_wasm_abi::OpError`] (for
    /// example of code `stream`, or `too_large` for a line over the host's 16 MiB limit).
    ///
    /// The reader is `Send`, `Sync` and `Unpin`. Dropping the future or the reader early
    /// cancels the request on the host.
    ///
    /// # Errors
    /// [`Error::Api`](crate::Error::Api) for a 4xx/5xx response (with the server's
    /// `Status`, or one synthesised from the body), and the host's failures to send the
    /// request ([`Error::Service`](crate::Error::Service), …), as for
    /// [`Client::request`].
    pub async fn request_stream(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<impl AsyncBufRead + use<>> {
        let op = self.submit(request, ResponseMode::Lines)?;
        let op = await_head(op, "streamed request").await?;
        Ok(BodyReader::new(op))
    }
}
