//! An in-process fake host for native unit tests (not built for wasm32).
//!
//! It stands in for the ABI imports on the current thread: submitted ops are recorded for the
//! test to inspect, and the test completes them, which runs the guest executor exactly as the
//! `kube_wasm_complete` export does.
//!
//! Time is virtual while a fake host is installed: the guest's clock (`Instant::now()` of
//! kube-wasm-tokio) starts at the install and moves only when the test calls
//! [`FakeHost::advance`] — which fires every delay falling due on the way, in deadline order,
//! as tokio's paused test clock does — or completes a delay itself, which moves the clock to
//! that delay's deadline.
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
use crate::imports::{self, NativeHost};
use crate::{entry, reactor};
use kube_wasm_abi::names::{
    IMPORT_HTTP_REQUEST, IMPORT_STREAM_OPEN, IMPORT_STREAM_SEND, IMPORT_WATCH,
};
use kube_wasm_abi::{
    Completion, FrameError, HttpRequest, OpId, StreamOpen, StreamSend, WatchRequest, decode_frame,
    encode_frame,
};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

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
    /// `stream_open` (ABI 1.1).
    StreamOpen {
        /// Op id of the stream.
        id: OpId,
        /// The decoded envelope header.
        request: StreamOpen,
    },
    /// `stream_send` (ABI 1.1).
    StreamSend {
        /// Op id of the send.
        id: OpId,
        /// The stream it was queued on.
        stream: OpId,
        /// The decoded envelope header.
        message: StreamSend,
        /// The message payload.
        body: Vec<u8>,
    },
}

impl Submitted {
    /// The op id.
    pub fn id(&self) -> OpId {
        match self {
            Submitted::Http { id, .. }
            | Submitted::Watch { id, .. }
            | Submitted::Delay { id, .. }
            | Submitted::StopSignal { id }
            | Submitted::StreamOpen { id, .. }
            | Submitted::StreamSend { id, .. } => *id,
        }
    }
}

struct State {
    next_id: OpId,
    submitted: VecDeque<Submitted>,
    live: BTreeSet<OpId>,
    cancelled: Vec<OpId>,
    bad_calls: Vec<String>,
    /// Credit granted per stream with `stream_credit`, summed.
    credit: BTreeMap<OpId, u64>,
    /// The virtual clock: `epoch + elapsed`.
    epoch: Instant,
    elapsed: Duration,
    /// Live delays by deadline (as time since `epoch`), then id.
    timers: BTreeSet<(Duration, OpId)>,
    deadlines: BTreeMap<OpId, Duration>,
}

impl State {
    fn retire(&mut self, op: OpId) -> bool {
        if let Some(deadline) = self.deadlines.remove(&op) {
            self.timers.remove(&(deadline, op));
        }
        self.live.remove(&op)
    }
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
            submitted: VecDeque::new(),
            live: BTreeSet::new(),
            cancelled: Vec::new(),
            bad_calls: Vec::new(),
            credit: BTreeMap::new(),
            epoch: Instant::now(),
            elapsed: Duration::ZERO,
            timers: BTreeSet::new(),
            deadlines: BTreeMap::new(),
        }));
        let host = Self { state };
        imports::install_native_host(Rc::new(host.clone()));
        host
    }

    pub(crate) fn submit(&self, make: impl FnOnce(OpId) -> Submitted) -> OpId {
        let mut state = self.state.borrow_mut();
        let id = state.next_id;
        state.next_id += 1;
        state.live.insert(id);
        let submitted = make(id);
        if let Submitted::Delay { millis, .. } = submitted {
            let deadline = state.elapsed.saturating_add(Duration::from_millis(millis));
            state.timers.insert((deadline, id));
            state.deadlines.insert(id, deadline);
        }
        state.submitted.push_back(submitted);
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
        let was_live = state.retire(op);
        if was_live {
            state.cancelled.push(op);
        }
        was_live
    }

    pub(crate) fn grant_credit(&self, stream: OpId, n: u32) -> bool {
        let mut state = self.state.borrow_mut();
        if !state.live.contains(&stream) {
            return false;
        }
        *state.credit.entry(stream).or_default() += u64::from(n);
        true
    }

    /// Total credit the guest granted `stream` with `stream_credit` (not counting the
    /// initial credit of its `stream_open` header).
    pub fn granted_credit(&self, stream: OpId) -> u64 {
        self.state
            .borrow()
            .credit
            .get(&stream)
            .copied()
            .unwrap_or(0)
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
            let mut state = self.state.borrow_mut();
            if let Some(&deadline) = state.deadlines.get(&op) {
                state.elapsed = state.elapsed.max(deadline);
            }
            state.retire(op);
        }
        entry::complete(op, frame);
    }

    /// The virtual clock's current instant (what the guest's `Instant::now()` returns).
    pub fn now(&self) -> Instant {
        let state = self.state.borrow();
        state.epoch + state.elapsed
    }

    /// Virtual time since the fake host was installed.
    pub fn elapsed(&self) -> Duration {
        self.state.borrow().elapsed
    }

    /// Time until the earliest live delay falls due, if any delay is live.
    pub fn next_timer(&self) -> Option<Duration> {
        let state = self.state.borrow();
        let &(deadline, _) = state.timers.first()?;
        Some(deadline.saturating_sub(state.elapsed))
    }

    /// Moves the virtual clock forward by `by`. Every delay due on the way fires in deadline
    /// order (ties in submission order): the clock stops at its deadline, the delay completes
    /// with `elapsed` and the guest runs until stalled — so delays it starts then fire too if
    /// they fall due before the end. Returns the ids of the delays that fired.
    pub fn advance(&self, by: Duration) -> Vec<OpId> {
        let end = self.elapsed().saturating_add(by);
        let mut fired = Vec::new();
        loop {
            let due = {
                let state = self.state.borrow();
                state.timers.first().copied().filter(|&(at, _)| at <= end)
            };
            let Some((_, id)) = due else { break };
            self.complete(id, &Completion::Elapsed {}, b"");
            fired.push(id);
        }
        let mut state = self.state.borrow_mut();
        state.elapsed = state.elapsed.max(end);
        fired
    }

    /// Advances the virtual clock to the earliest live delay and fires it (see
    /// [`advance`](Self::advance)); returns how far the clock moved, or `None` (leaving the
    /// clock alone) if no delay is live.
    pub fn advance_to_next_timer(&self) -> Option<Duration> {
        let step = self.next_timer()?;
        self.advance(step);
        Some(step)
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

/// The imports, as this fake host answers them: each op is recorded as [`Submitted`] (a
/// frame that does not decode is a bad call, op id 0).
impl NativeHost for FakeHost {
    fn http_request(&self, frame: &[u8]) -> OpId {
        match decode_frame::<HttpRequest>(frame) {
            Ok(f) => self.submit(|id| Submitted::Http {
                id,
                request: f.header,
                body: f.body.to_vec(),
            }),
            Err(e) => self.bad_call(IMPORT_HTTP_REQUEST, e),
        }
    }

    fn watch(&self, frame: &[u8]) -> OpId {
        match decode_frame::<WatchRequest>(frame) {
            Ok(f) => self.submit(|id| Submitted::Watch {
                id,
                request: f.header,
            }),
            Err(e) => self.bad_call(IMPORT_WATCH, e),
        }
    }

    fn delay(&self, millis: u64) -> OpId {
        self.submit(|id| Submitted::Delay { id, millis })
    }

    fn stop_signal(&self) -> OpId {
        self.submit(|id| Submitted::StopSignal { id })
    }

    fn cancel(&self, op: OpId) -> bool {
        FakeHost::cancel(self, op)
    }

    fn stream_open(&self, frame: &[u8]) -> OpId {
        match decode_frame::<StreamOpen>(frame) {
            Ok(f) => self.submit(|id| Submitted::StreamOpen {
                id,
                request: f.header,
            }),
            Err(e) => self.bad_call(IMPORT_STREAM_OPEN, e),
        }
    }

    fn stream_send(&self, stream: OpId, frame: &[u8]) -> OpId {
        match decode_frame::<StreamSend>(frame) {
            Ok(f) => self.submit(|id| Submitted::StreamSend {
                id,
                stream,
                message: f.header,
                body: f.body.to_vec(),
            }),
            Err(e) => self.bad_call(IMPORT_STREAM_SEND, e),
        }
    }

    fn stream_credit(&self, stream: OpId, n: u32) -> bool {
        self.grant_credit(stream, n)
    }

    fn now(&self) -> Instant {
        FakeHost::now(self)
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
