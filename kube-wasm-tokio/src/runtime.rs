//! A handle to the guest's executor, with the part of tokio's `tokio::runtime` API that works
//! without building a runtime: [`Handle::current`] and spawning through it.
//!
//! A guest has exactly one executor, always running, so every task is "inside a runtime" and
//! `Handle::current()` never fails. `Runtime` and `Builder` are absent: a module cannot start
//! another executor (the host drives the one it has).

use crate::task::{self, JoinHandle};
use std::future::Future;

/// A handle to the guest executor, as `tokio::runtime::Handle`. Cheap to clone; all handles
/// are the same executor.
#[derive(Debug, Clone, Copy, Default)]
pub struct Handle {
    _private: (),
}

/// The error of [`Handle::try_current`], as tokio's. Never returned in a guest.
#[derive(Debug)]
pub struct TryCurrentError {
    _private: (),
}

impl std::fmt::Display for TryCurrentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no reactor running")
    }
}

impl std::error::Error for TryCurrentError {}

impl Handle {
    /// The current executor's handle, as `Handle::current()`.
    pub fn current() -> Handle {
        Handle { _private: () }
    }

    /// The current executor's handle; always `Ok` in a guest.
    pub fn try_current() -> Result<Handle, TryCurrentError> {
        Ok(Handle::current())
    }

    /// Spawns a task on the executor, as [`crate::spawn`].
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        task::spawn(future)
    }

    /// Runs blocking code as a task, as [`task::spawn_blocking`] (inline: a guest has no
    /// thread pool).
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        task::spawn_blocking(f)
    }
}
