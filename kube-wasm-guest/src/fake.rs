//! An in-process fake host for native unit tests (not built for wasm32).
//!
//! It stands in for the ABI imports on the current thread: submitted ops are recorded for the
//! test to inspect, and the test completes them, which runs the guest executor exactly as the
//! `kube_wasm_complete` export does. No real time passes: delays elapse when the test says so.
//!
//! ```
//! use kube_wasm_guest::{Op, fake::{FakeHost, Submitted}};
//! use kube_wasm_abi::Completion;
//! use futures::StreamExt;
//!
//! let host = FakeHost::install();
//! let mut task = host.spawn(async { Op::delay(5).next().await.map(|d| d.completion) });
//! host.run_until_stalled();
//! let [Submitted::Delay { id, millis: 5 }] = host.take_submitted()[..] else { panic!() };
//! host.complete(id, &Completion::Elapsed {}, b"");
//! assert_eq!(task.output(), Some(Some(Completion::Elapsed {})));
//! ```

use crate::executor::{self, JoinHandle, spawn_local};
use crate::{entry, reactor};
use kube_wasm_abi::{Completion, FrameError, HttpRequest, OpId, WatchRequest, encode_frame};
use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// An op as the guest submitted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// `http_request`.
    Http {
        /// Op id.
        id: OpId,
        /// The decoded envelope header.
        request: HttpRequest,
        /// The raw request body.
        body: Vec<u8>,
    },
    /// `watch`.
    Watch {
        /// Op id.
        id: OpId,
        /// The decoded envelope header.
        request: WatchRequest,
    },
    /// `delay`.
    Delay {
        /// Op id.
        id: OpId,
        /// Requested duration in milliseconds.
        millis: u64,
    },
    /// `stop_signal`.
    StopSignal {
        /// Op id.
        id: OpId,
    },
}

impl Submitted {
    /// The op id.
    pub fn id(&self) -> OpId {
        match self {
            Submitted::Http { id, .. }
            | Submitted::Watch { id, .. }
            | Submitted::Delay { id, .. }
            | Submitted::StopSignal { id } => *id,
        }
    }
}

#[derive(Default)]
struct State {
    next_id: OpId,
    submitted: VecDeque<Submitted>,
    live: BTreeSet<OpId>,
    cancelled: Vec<OpId>,
    bad_calls: Vec<String>,
}

thread_local! {
    static INSTALLED: RefCell<Option<Rc<RefCell<State>>>> = const { RefCell::new(None) };
}

/// Runs `f` against this thread's fake host.
///
/// # Panics
/// If no [`FakeHost`] is installed on this thread: outside wasm32, guest code needs one.
pub(crate) fn with_installed<R>(f: impl FnOnce(&FakeHost) -> R) -> R {
    let state = INSTALLED.with(|i| i.borrow().clone()).expect(
        "kube-wasm guest code needs a host: run it inside the host shim (wasm32-wasip1), \
         or install kube_wasm_guest::fake::FakeHost in native tests",
    );
    f(&FakeHost { state })
}

/// Runs `f` against this thread's fake host if one is installed and the thread is not being
/// torn down.
pub(crate) fn try_with_installed<R>(f: impl FnOnce(&FakeHost) -> R) -> Option<R> {
    let state = INSTALLED.try_with(|i| i.borrow().clone()).ok().flatten()?;
    Some(f(&FakeHost { state }))
}

/// The fake host of the current thread.
#[derive(Clone)]
pub struct FakeHost {
    state: Rc<RefCell<State>>,
}

impl FakeHost {
    /// Installs a fresh fake host on this thread, dropping all tasks and ops of a previous
    /// one, and returns it.
    pub fn install() -> Self {
        executor::reset();
        reactor::reset();
        entry::reset();
        let state = Rc::new(RefCell::new(State {
            next_id: 1,
            ..State::default()
        }));
        INSTALLED.with(|i| *i.borrow_mut() = Some(state.clone()));
        Self { state }
    }

    pub(crate) fn submit(&self, make: impl FnOnce(OpId) -> Submitted) -> OpId {
        let mut state = self.state.borrow_mut();
        let id = state.next_id;
        state.next_id += 1;
        state.live.insert(id);
        state.submitted.push_back(make(id));
        id
    }

    pub(crate) fn bad_call(&self, import: &str, error: FrameError) -> OpId {
        self.state
            .borrow_mut()
            .bad_calls
            .push(format!("{import}: {error}"));
        0
    }

    pub(crate) fn cancel(&self, op: OpId) -> bool {
        let mut state = self.state.borrow_mut();
        let was_live = state.live.remove(&op);
        if was_live {
            state.cancelled.push(op);
        }
        was_live
    }

    /// Spawns `future` as a guest task (without running it yet) and returns a handle to read
    /// its output.
    pub fn spawn<F>(&self, future: F) -> TestTask<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        TestTask {
            handle: spawn_local(future),
        }
    }

    /// Starts `main` as the module's root task, as `#[tokio::main]` does, and runs until
    /// stalled. Its exit status is then [`FakeHost::exit_status`].
    pub fn run_main<F: Future<Output = i32> + 'static>(&self, main: F) {
        entry::run_main(main);
    }

    /// The root task's exit status, once it has finished.
    pub fn exit_status(&self) -> Option<i32> {
        entry::exit_status()
    }

    /// Runs the guest executor until stalled, as after every host entry.
    pub fn run_until_stalled(&self) {
        executor::run_until_stalled();
    }

    /// Takes the ops submitted since the last call, in submission order.
    pub fn take_submitted(&self) -> Vec<Submitted> {
        self.state.borrow_mut().submitted.drain(..).collect()
    }

    /// Delivers a completion to `op` as the host would (encoding it as a frame and calling
    /// the `kube_wasm_complete` path), then runs until stalled. A final completion retires
    /// the op on the host side.
    pub fn complete(&self, op: OpId, completion: &Completion, body: &[u8]) {
        self.complete_raw(op, encode_frame(completion, body), completion.is_final());
    }

    /// Delivers raw frame bytes to `op` (e.g. a malformed frame), then runs until stalled.
    pub fn complete_raw(&self, op: OpId, frame: Vec<u8>, is_final: bool) {
        if is_final {
            self.state.borrow_mut().live.remove(&op);
        }
        entry::complete(op, frame);
    }

    /// Ops the guest cancelled, in order.
    pub fn cancelled(&self) -> Vec<OpId> {
        self.state.borrow().cancelled.clone()
    }

    /// Ops issued and neither finished nor cancelled.
    pub fn live(&self) -> Vec<OpId> {
        self.state.borrow().live.iter().copied().collect()
    }

    /// Malformed import calls the guest made (the real host would end the module).
    pub fn bad_calls(&self) -> Vec<String> {
        self.state.borrow().bad_calls.clone()
    }
}

/// A task spawned by [`FakeHost::spawn`].
pub struct TestTask<T> {
    handle: JoinHandle<T>,
}

impl<T> TestTask<T> {
    /// The task's output if it has finished, else `None`. Takes the output: a second call
    /// returns `None`.
    pub fn output(&mut self) -> Option<T> {
        let mut cx = Context::from_waker(Waker::noop());
        match std::pin::Pin::new(&mut self.handle).poll(&mut cx) {
            Poll::Ready(Ok(out)) => Some(out),
            Poll::Ready(Err(_)) | Poll::Pending => None,
        }
    }

    /// Whether the task has finished.
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Aborts the task (dropping its future before its next poll).
    pub fn abort(&self) {
        self.handle.abort();
    }
}
