//! The tokio API that kube-rs controllers use, running on the kube-wasm guest executor.
//!
//! **Replaces** `tokio` 1.x in a controller's wasm32 build, under the name `tokio`. The port guide
//! is the kube-wasm book's *Porting a Rust controller* (`docs/src/porting/rust.md` in the
//! repository; `scripts/book.sh build` renders the book).
//!
//! A controller compiled for wasm32-wasip1 depends on this crate *as* `tokio`:
//!
//! ```toml
//! [target.'cfg(target_arch = "wasm32")'.dependencies]
//! tokio = { package = "kube-wasm-tokio", version = "0.1", features = ["full"] }
//! ```
//!
//! and its source stays as it is: `#[tokio::main]`, [`#[tokio::test]`](test), [`spawn`],
//! [`task`], [`time`], [`signal::ctrl_c`], [`select!`], [`join!`], [`sync`], [`io`] keep tokio
//! 1.x paths and signatures. Timers are `delay` operations of the kube-wasm ABI; tasks run on the guest's
//! single-threaded executor, which the host enters only when an operation completes.
//!
//! [`runtime::Handle`] reaches the one executor a guest has. What cannot exist in a guest —
//! `fs`, `process`, building a `Runtime` — is absent, so code that uses it fails to compile
//! on tokio's own paths rather than at run time; [`net`]'s common items (`TcpListener::bind`,
//! `TcpStream::connect`) exist only to fail to compile with a message saying why.
//! `sync`, `io` (traits and utilities), `select!`, `join!`, `try_join!` and `pin!` are real
//! tokio's executor-agnostic parts, re-exported; [`io::stdin`], [`io::stdout`] and
//! [`io::stderr`] are the module's WASI stdio, read and written with blocking calls in place.
//!
//! # Threads
//!
//! A guest has one thread. `std::thread::spawn` still compiles (std has it for every target)
//! but panics at run time with `failed to spawn thread: … Unsupported …`; a compile-time check
//! is not possible from this crate. `#[tokio::main]` and `#[tokio::test]` install a panic hook
//! that, after the usual report of that panic, names what to use instead: [`spawn`] for
//! concurrent async work, [`task::spawn_blocking`] (inline on the one thread, blocking every
//! other task until it returns) for blocking work.
//!
//! The rest of this page is the crate's README.
#![doc = include_str!("../README.md")]

pub mod io;
pub mod net;
mod panic_advice;
pub mod runtime;
pub mod signal;
pub mod task;
pub mod time;

pub use kube_wasm_tokio_macros::{main, test};
pub use task::spawn;

/// Synchronisation primitives: real tokio's `tokio::sync`, which work on any executor.
pub mod sync {
    pub use tokio::sync::*;
}

pub use tokio::{join, pin, select, try_join};

#[doc(hidden)]
pub mod __private {
    /// Installs the hook that follows a `std::thread::spawn` panic with what to use instead
    /// (done by `#[tokio::main]` and `#[tokio::test]`).
    pub fn install_panic_advice() {
        crate::panic_advice::install();
    }

    use std::future::Future;
    use std::process::{ExitCode, Termination};

    /// The body of the `main` that `#[tokio::main]` generates: runs `body` as the module's
    /// root task. Its output reports the exit status as a native `main` does (printing
    /// `Error: {e:?}` for an `Err`).
    pub fn run_main<F, T>(body: F)
    where
        F: Future<Output = T> + 'static,
        T: Termination,
    {
        crate::panic_advice::install();
        kube_wasm_guest::entry::run_main(async move {
            if body.await.report() == ExitCode::SUCCESS {
                0
            } else {
                1
            }
        });
    }

    /// The body of the test function that `#[tokio::test]` generates: runs `body` as a task
    /// on the guest executor until it finishes and returns its output (a panic in it fails
    /// the test).
    ///
    /// Natively (unit tests) the test gets a fresh fake host, whose clock is virtual: when
    /// every task waits and a timer is pending, the clock jumps to it, as tokio's paused
    /// clock does. A body still waiting with nothing left to move it — an API request, a
    /// watch, `ctrl_c`, a channel nobody sends on — fails the test instead of hanging. On
    /// wasm32 the host cannot enter a test while it runs, so a body that waits for the host
    /// at all fails the same way.
    pub fn run_test<F, T>(name: &'static str, body: F) -> T
    where
        F: Future<Output = T> + 'static,
        T: 'static,
    {
        use std::task::{Context, Poll, Waker};
        crate::panic_advice::install();
        let host = TestHost::install();
        let mut task = std::pin::pin!(kube_wasm_guest::spawn_local(body));
        loop {
            kube_wasm_guest::executor::run_until_stalled();
            if let Poll::Ready(output) = task.as_mut().poll(&mut Context::from_waker(Waker::noop()))
            {
                return output.expect("the test's task is never aborted");
            }
            if !host.advance_to_next_timer() {
                host.stuck(name);
            }
        }
    }

    /// Natively: the fake host a `#[tokio::test]` runs against.
    #[cfg(not(target_arch = "wasm32"))]
    struct TestHost(kube_wasm_guest::fake::FakeHost);

    #[cfg(not(target_arch = "wasm32"))]
    impl TestHost {
        fn install() -> Self {
            TestHost(kube_wasm_guest::fake::FakeHost::install())
        }

        fn advance_to_next_timer(&self) -> bool {
            self.0.advance_to_next_timer().is_some()
        }

        fn stuck(&self, name: &str) -> ! {
            panic!(
                "#[tokio::test] `{name}` cannot finish: its body waits for something nothing \
                 will deliver ({} host operation(s) in flight — API requests, watches, \
                 ctrl_c — and no timer). Natively a #[tokio::test] runs against an empty fake \
                 host; to answer host operations, drive the code with \
                 kube_wasm_guest::fake::FakeHost from a plain #[test].",
                self.0.live().len()
            )
        }
    }

    /// On wasm32: the host, which cannot enter the module while a test runs.
    #[cfg(target_arch = "wasm32")]
    struct TestHost;

    #[cfg(target_arch = "wasm32")]
    impl TestHost {
        fn install() -> Self {
            TestHost
        }

        fn advance_to_next_timer(&self) -> bool {
            false
        }

        fn stuck(&self, name: &str) -> ! {
            panic!(
                "#[tokio::test] `{name}` cannot finish: its body waits for the host (a timer, \
                 an API request, a watch, ctrl_c) or for a task that does, and the host cannot \
                 enter a wasm32 guest while a test runs. Keep such tests native (against real \
                 tokio, or kube_wasm_guest::fake::FakeHost)."
            )
        }
    }
}
