//! [`JoinSet`]: a collection of tasks awaited in completion order, with tokio's
//! `tokio::task::JoinSet` API.

use super::{AbortHandle, Id, JoinError, JoinHandle};
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// A set of tasks spawned on the guest executor, awaited in the order they finish (tokio's
/// `JoinSet`).
///
/// Tasks run whether or not the set is polled; [`join_next`](Self::join_next) yields each
/// task's output once it has finished, in completion order, or `None` when the set is empty.
/// An aborted task yields `Err(JoinError)` with [`JoinError::is_cancelled`] true (a panic in a
/// guest ends the module, so there is no panicked `JoinError`).
///
/// Dropping the set aborts every task still in it, as tokio does; [`detach_all`](Self::detach_all)
/// lets them run on instead.
pub struct JoinSet<T> {
    tasks: Vec<JoinHandle<T>>,
}

impl<T> JoinSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        JoinSet { tasks: Vec::new() }
    }

    /// How many tasks are in the set, finished but not yet joined included.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the set holds no task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

impl<T: 'static> JoinSet<T> {
    /// Spawns `task` into the set, as `tokio::spawn`; the returned handle can abort it. The
    /// `Send` bounds are tokio's, kept so code compiles unchanged natively and here.
    pub fn spawn<F>(&mut self, task: F) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        self.insert(super::spawn(task))
    }

    /// Spawns a `!Send` task into the set, as `tokio::task::spawn_local` (no `LocalSet` is
    /// needed in a guest).
    pub fn spawn_local<F>(&mut self, task: F) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        self.insert(super::spawn_local(task))
    }

    /// Runs `f` as a task of the set, as `tokio::task::spawn_blocking`: inline on the guest's
    /// one thread when first polled.
    pub fn spawn_blocking<F>(&mut self, f: F) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        self.insert(super::spawn_blocking(f))
    }

    fn insert(&mut self, handle: JoinHandle<T>) -> AbortHandle {
        let abort = handle.abort_handle();
        self.tasks.push(handle);
        abort
    }

    /// Waits for any task of the set to finish and returns its output; `None` if the set is
    /// empty. Cancel safe: a task's output is removed from the set only when returned.
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// As [`join_next`](Self::join_next), with the finished task's id.
    pub async fn join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        poll_fn(|cx| self.poll_join_next_with_id(cx)).await
    }

    /// The output of a task that has already finished, without waiting; `None` if none has
    /// (or the set is empty).
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        self.try_join_next_with_id()
            .map(|r| r.map(|(_, output)| output))
    }

    /// As [`try_join_next`](Self::try_join_next), with the finished task's id.
    pub fn try_join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        match self.poll_join_next_with_id(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(next) => next,
            Poll::Pending => None,
        }
    }

    /// Polls for a finished task, as `JoinSet::poll_join_next`: `Ready(None)` when the set is
    /// empty; `Pending` (waking `cx` when a task finishes) when none has finished yet.
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        self.poll_join_next_with_id(cx)
            .map(|next| next.map(|r| r.map(|(_, output)| output)))
    }

    /// As [`poll_join_next`](Self::poll_join_next), with the finished task's id.
    pub fn poll_join_next_with_id(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<(Id, T), JoinError>>> {
        if self.tasks.is_empty() {
            return Poll::Ready(None);
        }
        // Every handle registers `cx`'s waker, so whichever task finishes first wakes us.
        for i in 0..self.tasks.len() {
            if let Poll::Ready(result) = Pin::new(&mut self.tasks[i]).poll(cx) {
                let handle = self.tasks.swap_remove(i);
                return Poll::Ready(Some(result.map(|output| (handle.id(), output))));
            }
        }
        Poll::Pending
    }

    /// Waits for every task and returns their outputs in completion order, as tokio's
    /// `join_all`.
    ///
    /// # Panics
    /// If a task ended with a [`JoinError`] (it was aborted), as tokio does; the remaining
    /// tasks are aborted when the set drops during the unwind.
    pub async fn join_all(mut self) -> Vec<T> {
        let mut outputs = Vec::with_capacity(self.len());
        while let Some(result) = self.join_next().await {
            match result {
                Ok(output) => outputs.push(output),
                Err(e) => panic!("a task of the JoinSet failed: {e}"),
            }
        }
        outputs
    }

    /// Aborts every task and waits until each has stopped; the set is then empty. Outputs of
    /// tasks that had finished are discarded.
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }
}

impl<T> JoinSet<T> {
    /// Aborts every task of the set. They stay in it: [`join_next`](JoinSet::join_next) yields
    /// a cancelled `JoinError` for each (or the output of one that had already finished).
    pub fn abort_all(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }

    /// Removes every task from the set without aborting it: they keep running, detached.
    pub fn detach_all(&mut self) {
        self.tasks.clear();
    }
}

impl<T> Default for JoinSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for JoinSet<T> {
    /// Aborts every task still in the set, as tokio's `JoinSet` does on drop.
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet").field("len", &self.len()).finish()
    }
}

impl<T, F> FromIterator<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    /// Spawns every future of the iterator into a new set, as tokio's `collect::<JoinSet<_>>()`.
    fn from_iter<I: IntoIterator<Item = F>>(iter: I) -> Self {
        let mut set = JoinSet::new();
        set.extend(iter);
        set
    }
}

impl<T, F> Extend<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    /// Spawns every future of the iterator into the set.
    fn extend<I: IntoIterator<Item = F>>(&mut self, iter: I) {
        for future in iter {
            self.spawn(future);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::JoinSet;
    use kube_wasm_guest::fake::FakeHost;
    use std::cell::Cell;
    use std::rc::Rc;
    use std::time::Duration;

    #[test]
    fn join_next_yields_outputs_in_completion_order_then_none() {
        let host = FakeHost::install();
        let mut task = host.spawn(async {
            let mut set = JoinSet::new();
            set.spawn(async {
                crate::time::sleep(Duration::from_millis(30)).await;
                "slow"
            });
            set.spawn(async {
                crate::time::sleep(Duration::from_millis(10)).await;
                "fast"
            });
            set.spawn(async { "now" });
            assert_eq!(set.len(), 3);
            let mut order = Vec::new();
            while let Some(result) = set.join_next().await {
                order.push(result.unwrap());
            }
            assert!(set.is_empty());
            order
        });
        host.run_until_stalled();
        host.advance(Duration::from_millis(50));
        assert_eq!(task.output(), Some(vec!["now", "fast", "slow"]));
    }

    #[test]
    fn try_join_next_returns_only_finished_tasks() {
        let host = FakeHost::install();
        let mut task = host.spawn(async {
            let mut set = JoinSet::new();
            assert!(set.try_join_next().is_none(), "empty set");
            set.spawn(async {
                crate::time::sleep(Duration::from_millis(10)).await;
                1u32
            });
            assert!(set.try_join_next().is_none(), "not started yet");
            crate::task::yield_now().await;
            assert!(set.try_join_next().is_none(), "still sleeping");
            crate::time::sleep(Duration::from_millis(20)).await;
            let next = set.try_join_next().map(Result::unwrap);
            (next, set.len())
        });
        host.run_until_stalled();
        host.advance(Duration::from_millis(30));
        assert_eq!(task.output(), Some((Some(1), 0)));
    }

    #[test]
    fn aborted_tasks_yield_cancelled_join_errors() {
        let host = FakeHost::install();
        let mut task = host.spawn(async {
            let mut set = JoinSet::new();
            let handle = set.spawn(std::future::pending::<u32>());
            set.spawn(async { 2u32 });
            handle.abort();
            let mut cancelled = 0;
            let mut outputs = Vec::new();
            while let Some(result) = set.join_next_with_id().await {
                match result {
                    Ok((id, output)) => {
                        assert_ne!(id, handle.id());
                        outputs.push(output);
                    }
                    Err(e) => {
                        assert!(e.is_cancelled() && !e.is_panic());
                        assert_eq!(e.id(), handle.id());
                        cancelled += 1;
                    }
                }
            }
            (outputs, cancelled)
        });
        host.run_until_stalled();
        assert_eq!(task.output(), Some((vec![2], 1)));
    }

    #[test]
    fn dropping_the_set_aborts_its_tasks_and_detach_all_does_not() {
        let host = FakeHost::install();
        let ran = Rc::new(Cell::new(0));
        let mut task = host.spawn({
            let ran = ran.clone();
            async move {
                let mut set = JoinSet::new();
                let r = ran.clone();
                let dropped = set.spawn_local(async move {
                    crate::time::sleep(Duration::from_millis(10)).await;
                    r.set(r.get() + 1);
                });
                drop(set);
                let mut detached = JoinSet::new();
                let r = ran.clone();
                detached.spawn_local(async move {
                    crate::time::sleep(Duration::from_millis(10)).await;
                    r.set(r.get() + 10);
                });
                detached.detach_all();
                assert!(detached.is_empty());
                crate::task::yield_now().await;
                dropped.is_finished()
            }
        });
        host.run_until_stalled();
        assert_eq!(
            task.output(),
            Some(true),
            "the dropped set's task was aborted"
        );
        host.advance(Duration::from_millis(20));
        assert_eq!(ran.get(), 10, "only the detached task ran to the end");
    }

    #[test]
    fn shutdown_aborts_and_empties_and_join_all_collects() {
        let host = FakeHost::install();
        let mut task = host.spawn(async {
            let mut set: JoinSet<u32> = (0..3u32).map(|_| std::future::pending()).collect();
            set.shutdown().await;
            let emptied = set.is_empty();
            let all: JoinSet<u32> = (0..3u32).map(|i| async move { i * 2 }).collect();
            let mut outputs = all.join_all().await;
            outputs.sort();
            (emptied, outputs)
        });
        host.run_until_stalled();
        assert_eq!(task.output(), Some((true, vec![0, 2, 4])));
    }
}
