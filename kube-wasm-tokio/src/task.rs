//! Tasks on the guest executor, with tokio's `tokio::task` API.
//!
//! The guest has one thread: every task runs on it, and a task runs until it awaits something
//! not yet ready. The `Send` bounds of [`spawn`] are kept so that code written for tokio's
//! multi-threaded runtime compiles unchanged, and so that code that compiles here also
//! compiles natively.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

mod join_set;

pub use join_set::JoinSet;
pub use kube_wasm_guest::executor::Id;
pub use kube_wasm_guest::{AbortHandle, JoinError, JoinHandle};

/// Spawns a task, as `tokio::spawn`. It starts at the executor's next turn, before the host
/// is returned to; dropping the handle detaches it.
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    kube_wasm_guest::spawn_local(future)
}

/// Spawns a `!Send` task, as `tokio::task::spawn_local` (no `LocalSet` is needed: the guest
/// executor is local).
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    kube_wasm_guest::spawn_local(future)
}

/// Runs blocking code, as `tokio::task::spawn_blocking`. The guest has no thread pool: `f`
/// runs inline on the executor when the returned task is first polled, blocking other tasks
/// (and the module) until it returns.
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    kube_wasm_guest::spawn_local(async move { f() })
}

/// Runs `f` in place, as `tokio::task::block_in_place`.
pub fn block_in_place<F, R>(f: F) -> R
where
    F: FnOnce() -> R,
{
    f()
}

/// Yields to the executor once, as `tokio::task::yield_now`: every other task that is ready
/// runs before this one continues.
pub async fn yield_now() {
    YieldNow { yielded: false }.await
}

struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
