//! The guest's single-threaded executor.
//!
//! Tasks live in a table owned by the executor; a woken task's id goes into a FIFO ready
//! queue. [`run_until_stalled`] polls ready tasks until the queue is empty — no task can make
//! progress without a new completion from the host — and returns. There is no blocking and
//! no thread: the host enters the guest again when it has something to deliver.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

type LocalTask = Pin<Box<dyn Future<Output = ()>>>;

/// Ids of woken tasks, in wake order. Shared with wakers, which must be `Send + Sync`.
#[derive(Default)]
struct ReadyQueue(Mutex<VecDeque<u64>>);

impl ReadyQueue {
    fn push(&self, id: u64) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(id);
    }

    fn pop(&self) -> Option<u64> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }
}

/// The part of a task that wakers, join handles and abort handles share.
struct Header {
    id: u64,
    /// In the ready queue already: a second wake before the poll adds nothing.
    scheduled: AtomicBool,
    aborted: AtomicBool,
    finished: AtomicBool,
    queue: Arc<ReadyQueue>,
}

impl Wake for Header {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.scheduled.swap(true, Ordering::AcqRel) {
            self.queue.push(self.id);
        }
    }
}

struct Task {
    /// `None` while the task is being polled.
    future: Option<LocalTask>,
    header: Arc<Header>,
}

struct Executor {
    tasks: RefCell<HashMap<u64, Task>>,
    queue: Arc<ReadyQueue>,
    next_id: Cell<u64>,
    running: Cell<bool>,
}

thread_local! {
    static EXECUTOR: Executor = Executor {
        tasks: RefCell::new(HashMap::new()),
        queue: Arc::default(),
        next_id: Cell::new(1),
        running: Cell::new(false),
    };
}

/// Spawns a task on the guest executor; it first runs at the next [`run_until_stalled`]
/// (at the latest before the current entry returns to the host).
///
/// The future need not be `Send`: the guest has one thread. Dropping the returned handle
/// detaches the task; it keeps running.
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    EXECUTOR.with(|ex| {
        let id = ex.next_id.get();
        ex.next_id.set(id + 1);
        let header = Arc::new(Header {
            id,
            scheduled: AtomicBool::new(true),
            aborted: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            queue: ex.queue.clone(),
        });
        let state = Arc::new(Mutex::new(JoinState {
            output: None,
            waker: None,
        }));
        let mut completer = Completer {
            state: state.clone(),
            header: header.clone(),
            done: false,
        };
        let task: LocalTask = Box::pin(async move {
            let output = future.await;
            completer.finish(Ok(output));
        });
        ex.tasks.borrow_mut().insert(
            id,
            Task {
                future: Some(task),
                header: header.clone(),
            },
        );
        ex.queue.push(id);
        JoinHandle { state, header }
    })
}

/// Polls ready tasks until none is ready, then returns. A nested call (from inside a task)
/// returns at once; the outer loop carries on.
pub fn run_until_stalled() {
    EXECUTOR.with(|ex| {
        if ex.running.replace(true) {
            return;
        }
        let _running = ResetOnDrop(&ex.running);
        while let Some(id) = ex.queue.pop() {
            let taken = ex
                .tasks
                .borrow_mut()
                .get_mut(&id)
                .map(|t| (t.future.take(), t.header.clone()));
            let Some((Some(mut future), header)) = taken else {
                continue;
            };
            header.scheduled.store(false, Ordering::Release);
            if header.aborted.load(Ordering::Acquire) {
                let removed = ex.tasks.borrow_mut().remove(&id);
                drop((removed, future));
                continue;
            }
            let waker = Waker::from(header);
            match future.as_mut().poll(&mut Context::from_waker(&waker)) {
                Poll::Ready(()) => {
                    let removed = ex.tasks.borrow_mut().remove(&id);
                    drop((removed, future));
                }
                Poll::Pending => {
                    if let Some(task) = ex.tasks.borrow_mut().get_mut(&id) {
                        task.future = Some(future);
                    }
                }
            }
        }
    });
}

/// How many tasks exist (running or waiting).
pub fn task_count() -> usize {
    EXECUTOR.with(|ex| ex.tasks.borrow().len())
}

/// Drops every task: for a fresh fake host in tests.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn reset() {
    let tasks = EXECUTOR.with(|ex| {
        while ex.queue.pop().is_some() {}
        std::mem::take(&mut *ex.tasks.borrow_mut())
    });
    drop(tasks);
}

struct ResetOnDrop<'a>(&'a Cell<bool>);

impl Drop for ResetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

struct JoinState<T> {
    output: Option<Result<T, JoinError>>,
    waker: Option<Waker>,
}

/// Writes a task's outcome into its join state — `Ok` when it finishes, cancelled when the
/// task is dropped unfinished (aborted).
struct Completer<T> {
    state: Arc<Mutex<JoinState<T>>>,
    header: Arc<Header>,
    done: bool,
}

impl<T> Completer<T> {
    fn finish(&mut self, output: Result<T, JoinError>) {
        self.done = true;
        let waker = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.output = Some(output);
            state.waker.take()
        };
        self.header.finished.store(true, Ordering::Release);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Drop for Completer<T> {
    fn drop(&mut self) {
        if !self.done {
            let id = Id(self.header.id);
            self.finish(Err(JoinError { id }));
        }
    }
}

/// An owned permission to await a spawned task's output (tokio's `JoinHandle`).
///
/// Awaiting yields `Ok(output)`, or `Err(JoinError)` if the task was aborted. Dropping the
/// handle detaches the task: it keeps running.
pub struct JoinHandle<T> {
    state: Arc<Mutex<JoinState<T>>>,
    header: Arc<Header>,
}

impl<T> JoinHandle<T> {
    /// Cancels the task: it is dropped before its next poll and awaiting the handle yields a
    /// cancelled [`JoinError`]. No effect on a finished task.
    pub fn abort(&self) {
        abort(&self.header);
    }

    /// Whether the task has finished (completed or aborted).
    pub fn is_finished(&self) -> bool {
        self.header.finished.load(Ordering::Acquire)
    }

    /// A handle that can abort the task without awaiting it.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            header: self.header.clone(),
        }
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        Id(self.header.id)
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match state.output.take() {
            Some(output) => Poll::Ready(output),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.header.id)
            .finish()
    }
}

/// Aborts a task without owning its output (tokio's `AbortHandle`).
#[derive(Clone)]
pub struct AbortHandle {
    header: Arc<Header>,
}

impl AbortHandle {
    /// Cancels the task, as [`JoinHandle::abort`].
    pub fn abort(&self) {
        abort(&self.header);
    }

    /// Whether the task has finished (completed or aborted).
    pub fn is_finished(&self) -> bool {
        self.header.finished.load(Ordering::Acquire)
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        Id(self.header.id)
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle")
            .field("id", &self.header.id)
            .finish()
    }
}

fn abort(header: &Arc<Header>) {
    if !header.finished.load(Ordering::Acquire) {
        header.aborted.store(true, Ordering::Release);
        header.wake_by_ref();
    }
}

/// A task's id, unique among the tasks of one module (tokio's `task::Id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(u64);

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A task failed to complete (tokio's `JoinError`). In a wasm guest a panic aborts the
/// module, so the only failure that reaches a `JoinHandle` is cancellation.
#[derive(Debug)]
pub struct JoinError {
    id: Id,
}

impl JoinError {
    /// Whether the task was cancelled (aborted). Always true in the guest.
    pub fn is_cancelled(&self) -> bool {
        true
    }

    /// Whether the task panicked. Always false: a guest panic ends the module.
    pub fn is_panic(&self) -> bool {
        false
    }

    /// The id of the task that failed.
    pub fn id(&self) -> Id {
        self.id
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task {} was cancelled", self.id)
    }
}

impl std::error::Error for JoinError {}

impl From<JoinError> for std::io::Error {
    fn from(e: JoinError) -> Self {
        std::io::Error::other(e)
    }
}
