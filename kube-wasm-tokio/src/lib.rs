//! The tokio API that kube-rs controllers use, running on the kube-wasm guest executor.
//!
//! A controller compiled for wasm32-wasip1 depends on this crate *as* `tokio`:
//!
//! ```toml
//! [target.'cfg(target_arch = "wasm32")'.dependencies]
//! tokio = { package = "kube-wasm-tokio", version = "0.1", features = ["full"] }
//! ```
//!
//! and its source stays as it is: `#[tokio::main]`, [`spawn`], [`task`], [`time`],
//! [`signal::ctrl_c`], [`select!`], [`join!`], [`sync`], [`io`] keep tokio 1.x paths and
//! signatures. Timers are `delay` operations of the kube-wasm ABI; tasks run on the guest's
//! single-threaded executor, which the host enters only when an operation completes.
//!
//! [`runtime::Handle`] reaches the one executor a guest has. What cannot exist in a guest —
//! `fs`, `process`, building a `Runtime` — is absent, so code that uses it fails to compile
//! on tokio's own paths rather than at run time; [`net`]'s common items (`TcpListener::bind`,
//! `TcpStream::connect`) exist only to fail to compile with a message saying why.
//! `sync`, `io` (traits and utilities), `select!`, `join!`, `try_join!` and `pin!` are real
//! tokio's executor-agnostic parts, re-exported.

pub mod net;
pub mod runtime;
pub mod signal;
pub mod task;
pub mod time;

pub use kube_wasm_tokio_macros::main;
pub use task::spawn;

/// Synchronisation primitives: real tokio's `tokio::sync`, which work on any executor.
pub mod sync {
    pub use tokio::sync::*;
}

/// Asynchronous I/O traits and in-memory utilities: real tokio's `tokio::io` (without the
/// standard streams and file descriptors, which a guest does not have).
pub mod io {
    pub use tokio::io::*;
}

pub use tokio::{join, pin, select, try_join};

#[doc(hidden)]
pub mod __private {
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
        kube_wasm_guest::entry::run_main(async move {
            if body.await.report() == ExitCode::SUCCESS {
                0
            } else {
                1
            }
        });
    }
}
