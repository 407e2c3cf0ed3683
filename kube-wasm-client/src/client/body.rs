//! [`Body`]: the HTTP body of [`Client::send`](super::Client::send), as kube 5.0's
//! `kube::client::Body`.

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

/// An HTTP request or response body, as kube 5.0's `kube::client::Body`: what
/// [`Client::send`](super::Client::send) takes and returns.
///
/// Build one with [`Body::empty`] or `From<Bytes>` / `From<Vec<u8>>` (an empty buffer
/// makes an empty body, as in kube); read one with [`Body::collect_bytes`] or through its
/// [`http_body::Body`] implementation (`Data = Bytes`, `Error = kube::Error`, so
/// `http_body_util::BodyExt::collect` works as with kube).
///
/// The ABI carries whole bodies, so a body is always in memory: a request body as the
/// caller made it, a response body as the host delivered it once the response had been
/// read to its end. It yields its bytes as one data frame (none when empty), reports an
/// exact [`size_hint`](http_body::Body::size_hint), and never fails. What stays as in
/// kube is which bodies [`try_clone`](Body::try_clone) can copy: those built by the caller,
/// not those of responses (kube streams those from the connection).
///
/// `Send` and `Unpin`, and not `Sync`, exactly as kube's (whose response bodies wrap an
/// unsynchronised stream), so code written against either compiles against the other.
pub struct Body {
    /// The bytes not yet read; `None` for an empty body, and once read.
    bytes: Option<Bytes>,
    /// Where the body came from.
    origin: Origin,
    /// Makes the body `!Sync`, as kube's.
    _not_sync: PhantomData<Cell<()>>,
}

/// Where a [`Body`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// Built by the caller ([`Body::empty`], `From`): cloneable.
    Caller,
    /// A response the host delivered: not cloneable, as kube's response bodies.
    Response,
}

impl Body {
    fn new(bytes: Bytes, origin: Origin) -> Self {
        Self {
            bytes: (!bytes.is_empty()).then_some(bytes),
            origin,
            _not_sync: PhantomData,
        }
    }

    /// An empty body, as kube's `Body::empty`.
    pub const fn empty() -> Self {
        Self {
            bytes: None,
            origin: Origin::Caller,
            _not_sync: PhantomData,
        }
    }

    /// The body of a response the host delivered.
    pub(crate) fn response(bytes: Vec<u8>) -> Self {
        Self::new(Bytes::from(bytes), Origin::Response)
    }

    /// The bytes not yet read, leaving the body empty; what a request sends.
    pub(crate) fn take_bytes(&mut self) -> Bytes {
        self.bytes.take().unwrap_or_default()
    }

    /// All the data of the body (what has not been read yet), as kube's
    /// `Body::collect_bytes`.
    ///
    /// # Errors
    /// None in a guest (the body is in memory); the `Result` is kube's signature, whose
    /// streamed response bodies fail with [`Error::Service`](crate::Error::Service) when the
    /// connection breaks. Here such a failure is [`Client::send`](super::Client::send)'s.
    pub async fn collect_bytes(mut self) -> Result<Bytes, crate::Error> {
        Ok(self.take_bytes())
    }

    /// A copy of the body if it can be copied, as kube's `Body::try_clone`: `Some` for a
    /// body built with [`Body::empty`] or `From`, `None` for the body of a response (kube
    /// streams those and cannot replay them).
    pub fn try_clone(&self) -> Option<Self> {
        (self.origin == Origin::Caller).then(|| Self {
            bytes: self.bytes.clone(),
            origin: self.origin,
            _not_sync: PhantomData,
        })
    }
}

impl From<Bytes> for Body {
    /// A body of `bytes`; empty bytes make [`Body::empty`], as in kube.
    fn from(bytes: Bytes) -> Self {
        Self::new(bytes, Origin::Caller)
    }
}

impl From<Vec<u8>> for Body {
    /// A body of `vec`; an empty vector makes [`Body::empty`], as in kube.
    fn from(vec: Vec<u8>) -> Self {
        Self::from(Bytes::from(vec))
    }
}

impl fmt::Debug for Body {
    /// `Body { kind: "Once" }` for a body the caller built and `Body { kind: "Wrap" }` for a
    /// response body, as kube prints its bodies.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.origin {
            Origin::Caller => "Once",
            Origin::Response => "Wrap",
        };
        f.debug_struct("Body").field("kind", &kind).finish()
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = crate::Error;

    /// The body's bytes as one data frame, then the end; never an error.
    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, crate::Error>>> {
        Poll::Ready(
            self.get_mut()
                .bytes
                .take()
                .map(|bytes| Ok(Frame::data(bytes))),
        )
    }

    /// The exact number of bytes not yet read.
    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.bytes.as_ref().map_or(0, |b| b.len() as u64))
    }

    /// Whether every byte has been read (at once for an empty body).
    fn is_end_stream(&self) -> bool {
        self.bytes.is_none()
    }
}
