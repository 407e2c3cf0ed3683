//! A response body streamed by the host in `lines` mode, read back as bytes: the
//! `AsyncBufRead` behind [`Client::request_stream`](super::Client::request_stream) and
//! `Api::log_stream`.

use super::host_error::protocol_violation;
use futures::io::{AsyncBufRead, AsyncRead};
use kube_wasm_abi::Completion;
use kube_wasm_guest::Op;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// The body of a `lines`-mode response whose `head` has been read, as a byte reader.
///
/// Each `line` completion is one line of the body without its `\n`; the reader yields it
/// followed by `\n`, so the bytes read are the body's bytes in order. `end` is end of file.
///
/// The ABI delivers an unterminated last line (a body not ending in `\n`) as a `line`
/// before `end`, exactly like a terminated one, so the two cannot be told apart: the
/// reader always adds the `\n`. The bytes read therefore equal the body when it is empty
/// or ends with `\n` (as Kubernetes' container logs and newline-delimited JSON do), and
/// otherwise have one extra `\n` at the end. Line-oriented reading
/// (`AsyncBufReadExt::lines`) sees the same lines either way.
///
/// An `error` completion is an `io::Error` of kind `Other` wrapping the host's
/// [`kube_wasm_abi::OpError`] (as kube maps body errors with `io::Error::other`), after
/// which the reader is at end of file. Dropping the reader before `end` cancels the
/// request on the host. The reader is `Send`, `Sync` and `Unpin`.
#[derive(Debug)]
pub(crate) struct BodyReader {
    /// `None` once `end` or an error was read.
    op: Option<Op>,
    /// The current line and its `\n`.
    line: Vec<u8>,
    /// How much of `line` has been consumed.
    consumed: usize,
}

impl BodyReader {
    /// Reads the lines of `op`, whose `head` has been read.
    pub(crate) fn new(op: Op) -> Self {
        Self {
            op: Some(op),
            line: Vec::new(),
            consumed: 0,
        }
    }
}

impl AsyncBufRead for BodyReader {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        while this.consumed == this.line.len() {
            let Some(op) = this.op.as_mut() else {
                return Poll::Ready(Ok(&[]));
            };
            let Some(delivery) = ready!(op.poll_next_delivery(cx)) else {
                this.op = None;
                return Poll::Ready(Err(io::Error::other(protocol_violation(
                    "a lines-mode response ended without `end`",
                ))));
            };
            match delivery.completion {
                Completion::Line {} => {
                    this.line = delivery.into_body();
                    this.line.push(b'\n');
                    this.consumed = 0;
                }
                Completion::End {} => this.op = None,
                Completion::Error(error) => {
                    this.op = None;
                    return Poll::Ready(Err(io::Error::other(error)));
                }
                other => {
                    // Dropping the op cancels whatever the host still had for it.
                    this.op = None;
                    return Poll::Ready(Err(io::Error::other(protocol_violation(format_args!(
                        "{other:?} in a lines-mode body"
                    )))));
                }
            }
        }
        Poll::Ready(Ok(&this.line[this.consumed..]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.consumed = (this.consumed + amt).min(this.line.len());
    }
}

impl AsyncRead for BodyReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let available = ready!(self.as_mut().poll_fill_buf(cx))?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Poll::Ready(Ok(n))
    }
}
