//! Signals, with tokio's `tokio::signal` API. A guest receives one signal: the host's request
//! to stop the module, which plays the part of Ctrl-C ([`ctrl_c`]) and of SIGTERM / SIGINT
//! ([`unix::signal`]).

use kube_wasm_abi::Completion;
use kube_wasm_guest::Op;

/// Completes when the host asks the module to stop, as `tokio::signal::ctrl_c` completes on
/// SIGINT. Each call listens independently; all pending calls complete on the stop request.
///
/// Dropping the future stops listening (the `stop_signal` op is cancelled).
///
/// # Errors
/// An [`std::io::Error`] carrying the host's message if the host refused to listen: the
/// module is at its quota of pending ops (an `error` of code `quota`, ABI 1.3), as tokio's
/// `ctrl_c` fails when it cannot register the signal handler.
pub async fn ctrl_c() -> std::io::Result<()> {
    let mut op = Op::stop_signal();
    match op.next_delivery().await.map(|d| d.completion) {
        Some(Completion::Error(refused)) => Err(std::io::Error::other(refused)),
        _ => Ok(()),
    }
}

/// Unix signal streams, with tokio's `tokio::signal::unix` API. `SIGTERM` and `SIGINT`
/// ([`unix::SignalKind::terminate`], [`unix::SignalKind::interrupt`]) arrive once, when the host asks the
/// module to stop; no other signal ever reaches a guest, so their streams stay pending.
pub mod unix {
    use kube_wasm_abi::Completion;
    use kube_wasm_guest::Op;
    use std::task::{Context, Poll};

    /// A kind of signal, as tokio's `SignalKind` (the raw values are Linux's).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct SignalKind(i32);

    impl SignalKind {
        /// The kind of raw signal number `signum`.
        pub const fn from_raw(signum: i32) -> Self {
            Self(signum)
        }
        /// The raw signal number.
        pub const fn as_raw_value(&self) -> i32 {
            self.0
        }
        /// `SIGALRM`.
        pub const fn alarm() -> Self {
            Self(14)
        }
        /// `SIGCHLD`.
        pub const fn child() -> Self {
            Self(17)
        }
        /// `SIGHUP`.
        pub const fn hangup() -> Self {
            Self(1)
        }
        /// `SIGINT`: delivered on the host's stop request.
        pub const fn interrupt() -> Self {
            Self(2)
        }
        /// `SIGIO`.
        pub const fn io() -> Self {
            Self(29)
        }
        /// `SIGPIPE`.
        pub const fn pipe() -> Self {
            Self(13)
        }
        /// `SIGQUIT`.
        pub const fn quit() -> Self {
            Self(3)
        }
        /// `SIGTERM`: delivered on the host's stop request.
        pub const fn terminate() -> Self {
            Self(15)
        }
        /// `SIGUSR1`.
        pub const fn user_defined1() -> Self {
            Self(10)
        }
        /// `SIGUSR2`.
        pub const fn user_defined2() -> Self {
            Self(12)
        }
        /// `SIGWINCH`.
        pub const fn window_change() -> Self {
            Self(28)
        }

        fn is_stop_request(self) -> bool {
            self == Self::terminate() || self == Self::interrupt()
        }
    }

    impl From<i32> for SignalKind {
        fn from(signum: i32) -> Self {
            Self(signum)
        }
    }

    impl From<SignalKind> for i32 {
        fn from(kind: SignalKind) -> i32 {
            kind.0
        }
    }

    /// A stream of one kind of signal, as tokio's `Signal`.
    #[derive(Debug)]
    pub struct Signal {
        /// The `stop_signal` op while listening for a stop request that has not come yet.
        stop: Option<Op>,
    }

    /// Listens for signals of `kind`, as `tokio::signal::unix::signal`. Dropping the stream
    /// stops listening.
    ///
    /// # Errors
    /// None in a guest; the `io::Result` is tokio's signature.
    pub fn signal(kind: SignalKind) -> std::io::Result<Signal> {
        Ok(Signal {
            stop: kind.is_stop_request().then(Op::stop_signal),
        })
    }

    impl Signal {
        /// Waits for the next signal: `Some(())` once for the host's stop request (SIGTERM,
        /// SIGINT); pending after it, and always for other kinds. `None` if the host refused
        /// to listen (the module is at its quota of pending ops, ABI 1.3): no signal will
        /// come, as tokio's stream ends when its driver is gone.
        pub async fn recv(&mut self) -> Option<()> {
            std::future::poll_fn(|cx| self.poll_recv(cx)).await
        }

        /// Polls for the next signal (see [`recv`](Self::recv)).
        pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
            let Some(op) = self.stop.as_mut() else {
                return Poll::Pending;
            };
            match op.poll_next_delivery(cx) {
                Poll::Ready(Some(delivery))
                    if matches!(delivery.completion, Completion::Error(_)) =>
                {
                    self.stop = None;
                    Poll::Ready(None)
                }
                Poll::Ready(_) => {
                    self.stop = None;
                    Poll::Ready(Some(()))
                }
                Poll::Pending => Poll::Pending,
            }
        }
    }
}
