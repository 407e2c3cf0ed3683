//! `tokio::net`'s common items, present so that code using them fails to compile with a
//! message that says why: a kube-wasm module has no network access.
//!
//! The host makes every request to the API server (through `kube::Client`); a guest cannot
//! open, accept or connect a socket. [`TcpListener::bind`] and [`TcpStream::connect`] exist
//! with tokio's signatures, but each is bounded by [`NoNetworkAccess`], which nothing
//! implements, so a call is an error naming the alternative instead of "could not find `net`
//! in `tokio`". No value of [`TcpListener`] or [`TcpStream`] can exist.

mod no_access;

pub use no_access::NoNetworkAccess;

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Addresses `bind` and `connect` accept, as tokio's sealed `ToSocketAddrs`: every type that
/// implements `std::net::ToSocketAddrs` (`&str`, `String`, `SocketAddr`, `(IpAddr, u16)`, ...).
pub trait ToSocketAddrs {}

impl<T: std::net::ToSocketAddrs + ?Sized> ToSocketAddrs for T {}

/// tokio's TCP listener. It cannot exist in a guest: [`bind`](Self::bind) does not compile.
#[derive(Debug)]
pub struct TcpListener {
    never: Infallible,
}

impl TcpListener {
    /// tokio's `TcpListener::bind`, which does not compile in a guest (see [`NoNetworkAccess`]).
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener>
    where
        for<'a> Self: NoNetworkAccess<'a>,
    {
        let _ = addr;
        Err(io::ErrorKind::Unsupported.into())
    }

    /// tokio's `TcpListener::accept`; unreachable, as no listener exists.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        match self.never {}
    }

    /// tokio's `TcpListener::local_addr`; unreachable, as no listener exists.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match self.never {}
    }
}

/// tokio's TCP stream. It cannot exist in a guest: [`connect`](Self::connect) does not compile.
#[derive(Debug)]
pub struct TcpStream {
    never: Infallible,
}

impl TcpStream {
    /// tokio's `TcpStream::connect`, which does not compile in a guest (see [`NoNetworkAccess`]).
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream>
    where
        for<'a> Self: NoNetworkAccess<'a>,
    {
        let _ = addr;
        Err(io::ErrorKind::Unsupported.into())
    }

    /// tokio's `TcpStream::peer_addr`; unreachable, as no stream exists.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match self.never {}
    }

    /// tokio's `TcpStream::local_addr`; unreachable, as no stream exists.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match self.never {}
    }
}

/// Unreachable, as no stream exists; present so that reads on a stream type-check and the
/// only error is the one at `connect` / `accept`.
impl tokio::io::AsyncRead for TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.never {}
    }
}

/// Unreachable, as no stream exists (see the `AsyncRead` impl).
impl tokio::io::AsyncWrite for TcpStream {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, _: &[u8]) -> Poll<io::Result<usize>> {
        match self.never {}
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.never {}
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.never {}
    }
}
