//! Asynchronous I/O: real tokio's `tokio::io` traits and in-memory utilities (they work on any
//! executor), plus the standard streams [`stdin`], [`stdout`] and [`stderr`] of a guest.
//!
//! # The standard streams in a guest
//!
//! WASI stdio is synchronous and the guest has one thread, so [`Stdin`], [`Stdout`] and
//! [`Stderr`] do blocking `std::io` calls in place, where tokio hands them to its blocking
//! thread pool: a read or write completes within the `poll` that starts it (it is never
//! `Pending`), and while it blocks nothing else in the module runs — no other task, and no
//! completion from the host is delivered. Writes to stdout and stderr return at once in
//! practice (the host takes the bytes; in the kube-wasm host shim each line comes out
//! prefixed with the module's name). A read from stdin blocks the whole module until input
//! arrives; in the host shim a module's stdin is closed, so reads return end of file at once.
//!
//! Writes go through `std::io::stdout()`/`stderr()`, so they interleave correctly with
//! `println!`/`eprintln!`; stdout is line-buffered as in std: [`AsyncWriteExt::flush`] (or a
//! newline) pushes a partial line out.

pub use tokio::io::*;

use std::io::{Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A handle to the standard input stream of the module, as `tokio::io::Stdin`.
///
/// Reads are blocking `std::io::stdin()` reads, done in place (see the [module
/// docs](self#the-standard-streams-in-a-guest)): a read blocks the whole module until input
/// arrives. In the kube-wasm host shim stdin is closed and reads return end of file.
#[derive(Debug)]
pub struct Stdin {
    _private: (),
}

/// Constructs a new handle to the standard input of the module, as `tokio::io::stdin()`.
///
/// Reading from it blocks the whole guest (every task) until input arrives; see [`Stdin`].
pub fn stdin() -> Stdin {
    Stdin { _private: () }
}

/// A handle to the standard output stream of the module, as `tokio::io::Stdout`.
///
/// Writes are blocking `std::io::stdout()` writes, done in place (see the [module
/// docs](self#the-standard-streams-in-a-guest)); they interleave with `println!`.
#[derive(Debug)]
pub struct Stdout {
    _private: (),
}

/// Constructs a new handle to the standard output of the module, as `tokio::io::stdout()`.
pub fn stdout() -> Stdout {
    Stdout { _private: () }
}

/// A handle to the standard error stream of the module, as `tokio::io::Stderr`.
///
/// Writes are blocking, unbuffered `std::io::stderr()` writes, done in place (see the
/// [module docs](self#the-standard-streams-in-a-guest)); they interleave with `eprintln!`.
#[derive(Debug)]
pub struct Stderr {
    _private: (),
}

/// Constructs a new handle to the standard error of the module, as `tokio::io::stderr()`.
pub fn stderr() -> Stderr {
    Stderr { _private: () }
}

/// Retries `f` while it is interrupted, as `std::io`'s `read_exact`/`write_all` do.
fn retrying<T>(mut f: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

impl AsyncRead for Stdin {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = retrying(|| std::io::stdin().read(buf.initialize_unfilled()))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

macro_rules! blocking_writer {
    ($ty:ident, $std:path) => {
        impl AsyncWrite for $ty {
            fn poll_write(
                self: Pin<&mut Self>,
                _cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<std::io::Result<usize>> {
                Poll::Ready(retrying(|| $std().write(buf)))
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                _cx: &mut Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> Poll<std::io::Result<usize>> {
                Poll::Ready(retrying(|| $std().write_vectored(bufs)))
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(
                self: Pin<&mut Self>,
                _cx: &mut Context<'_>,
            ) -> Poll<std::io::Result<()>> {
                Poll::Ready(retrying(|| $std().flush()))
            }

            fn poll_shutdown(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<std::io::Result<()>> {
                self.poll_flush(cx)
            }
        }
    };
}

blocking_writer!(Stdout, std::io::stdout);
blocking_writer!(Stderr, std::io::stderr);
