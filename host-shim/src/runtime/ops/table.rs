//! The op table of one module: which ops are live, by the ids the host issued.

use std::collections::HashMap;
use std::fmt;

use kube_wasm_abi::OpId;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::OpKind;

struct LiveOp {
    kind: OpKind,
    /// The work task; `None` for an op refused by a quota, whose answer waits in the
    /// module's refusals and which holds nothing else.
    task: Option<AbortHandle>,
    started: std::time::Instant,
    /// When a timer falls due; `None` for other ops, and for a timer due beyond what the
    /// clock can count.
    due: Option<Instant>,
}

/// An op forgotten after its final completion (see [`OpTable::retire`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retired {
    /// Its kind.
    pub kind: OpKind,
    /// How long it was live, from its start to its retirement.
    pub lived: std::time::Duration,
    /// When it fell due, if it was a timer.
    pub due: Option<Instant>,
}

/// What a module's live ops wait for, as far as suspending it goes (see
/// [`IdleThreshold::suspend_at`](crate::runtime::suspend::IdleThreshold::suspend_at)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waits {
    /// Whether every live op stands waiting (see [`OpKind::answers_a_request`]): no request's
    /// answer, and no refused op's, is due.
    pub only_standing: bool,
    /// When the earliest live timer falls due.
    pub next_timer: Option<Instant>,
}

/// The live ops of one module, keyed by the ids the host issued to the guest.
///
/// Ids start at 1 and only grow: an id is never 0 and never reused while the module lives.
/// Ops with a work task ([`start`](Self::start)) are counted by kind, for the module's
/// [quotas](crate::runtime::quota); refused ones ([`refuse`](Self::refuse)) are not.
pub struct OpTable {
    next: OpId,
    live: HashMap<OpId, LiveOp>,
    working: HashMap<OpKind, usize>,
}

impl Default for OpTable {
    fn default() -> Self {
        Self::new()
    }
}

impl OpTable {
    /// An empty table; the first op gets id 1.
    pub fn new() -> Self {
        Self {
            next: 1,
            live: HashMap::new(),
            working: HashMap::new(),
        }
    }

    fn issue(&mut self) -> OpId {
        let id = self.next;
        self.next += 1;
        id
    }

    /// Registers a new op of `kind`: allocates its id, calls `spawn` with it to start the work
    /// task, and keeps the task's abort handle until the op finishes or is cancelled.
    pub fn start(&mut self, kind: OpKind, spawn: impl FnOnce(OpId) -> AbortHandle) -> OpId {
        let id = self.issue();
        let task = spawn(id);
        *self.working.entry(kind).or_default() += 1;
        self.insert(id, kind, Some(task));
        id
    }

    /// Registers an op of `kind` refused by a quota: it gets an id and stays live until its
    /// answer is delivered, but has no task and is not counted by [`working`](Self::working).
    pub fn refuse(&mut self, kind: OpKind) -> OpId {
        let id = self.issue();
        self.insert(id, kind, None);
        id
    }

    fn insert(&mut self, id: OpId, kind: OpKind, task: Option<AbortHandle>) {
        self.live.insert(
            id,
            LiveOp {
                kind,
                task,
                started: std::time::Instant::now(),
                due: None,
            },
        );
    }

    fn forget(&mut self, id: OpId) -> Option<LiveOp> {
        let op = self.live.remove(&id)?;
        if op.task.is_some()
            && let Some(n) = self.working.get_mut(&op.kind)
        {
            *n = n.saturating_sub(1);
        }
        Some(op)
    }

    /// Records when live timer `id` falls due (its work task sleeps until then).
    pub fn set_due(&mut self, id: OpId, due: Instant) {
        if let Some(op) = self.live.get_mut(&id) {
            op.due = Some(due);
        }
    }

    /// The kind of live op `id`.
    pub fn kind_of(&self, id: OpId) -> Option<OpKind> {
        self.live.get(&id).map(|op| op.kind)
    }

    /// What the live ops wait for: whether they all stand waiting, and the earliest timer.
    pub fn waits(&self) -> Waits {
        let mut waits = Waits {
            only_standing: true,
            next_timer: None,
        };
        for op in self.live.values() {
            if op.task.is_none() || op.kind.answers_a_request() {
                waits.only_standing = false;
            }
            if let Some(due) = op.due {
                waits.next_timer = Some(waits.next_timer.map_or(due, |next| next.min(due)));
            }
        }
        waits
    }

    /// Number of live ops of `kind` with a work task (refused ones are not counted).
    pub fn working(&self, kind: OpKind) -> usize {
        self.working.get(&kind).copied().unwrap_or(0)
    }

    /// Number of live ops with a work task, of every kind.
    pub fn working_total(&self) -> usize {
        self.working.values().sum()
    }

    /// Whether `id` is live: issued, and neither finished (final completion delivered) nor
    /// cancelled.
    pub fn is_live(&self, id: OpId) -> bool {
        self.live.contains_key(&id)
    }

    /// Forgets a finished op after its final completion has been delivered. Its task has
    /// already ended (or is about to: it sends nothing after a final completion). Returns
    /// what it was, if it was live.
    pub fn retire(&mut self, id: OpId) -> Option<Retired> {
        self.forget(id).map(|op| Retired {
            kind: op.kind,
            lived: op.started.elapsed(),
            due: op.due,
        })
    }

    /// Cancels a live op: aborts its task (dropping any upstream request or watch) and forgets
    /// it, so completions it already queued are discarded. Returns whether the op was live.
    pub fn cancel(&mut self, id: OpId) -> bool {
        match self.forget(id) {
            Some(op) => {
                if let Some(task) = op.task {
                    task.abort();
                }
                true
            }
            None => false,
        }
    }

    /// Aborts every live op (the module ended). Returns how many of each kind there were.
    pub fn cancel_all(&mut self) -> OpCounts {
        let mut counts = OpCounts::default();
        for (_, op) in self.live.drain() {
            if let Some(task) = op.task {
                task.abort();
            }
            *counts.by_kind.entry(op.kind).or_default() += 1;
        }
        self.working.clear();
        counts
    }

    /// Number of live ops.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no op is live.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Whether a live op of `kind` exists.
    pub fn has_live(&self, kind: OpKind) -> bool {
        self.live.values().any(|op| op.kind == kind)
    }
}

/// How many ops of each kind [`OpTable::cancel_all`] aborted. Displays as e.g.
/// `1 watch, 2 http requests`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OpCounts {
    by_kind: HashMap<OpKind, usize>,
}

impl OpCounts {
    /// Total number of ops.
    pub fn total(&self) -> usize {
        self.by_kind.values().sum()
    }

    /// Number of ops of `kind`.
    pub fn of(&self, kind: OpKind) -> usize {
        self.by_kind.get(&kind).copied().unwrap_or(0)
    }
}

impl fmt::Display for OpCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kinds: Vec<_> = self.by_kind.iter().filter(|(_, n)| **n > 0).collect();
        kinds.sort();
        if kinds.is_empty() {
            return f.write_str("no ops");
        }
        for (i, (kind, n)) in kinds.into_iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n} {}", kind.noun(*n))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle_task() -> AbortHandle {
        tokio::spawn(std::future::pending::<()>()).abort_handle()
    }

    #[tokio::test]
    async fn ids_start_at_one_and_are_never_reused() {
        let mut ops = OpTable::new();
        let a = ops.start(OpKind::Delay, |_| idle_task());
        let b = ops.start(OpKind::Watch, |_| idle_task());
        assert_eq!((a, b), (1, 2));
        assert!(ops.cancel(a));
        ops.retire(b);
        assert!(ops.is_empty());
        assert_eq!(ops.start(OpKind::Http, |_| idle_task()), 3);
    }

    #[tokio::test]
    async fn cancel_is_one_for_live_and_zero_otherwise() {
        let mut ops = OpTable::new();
        let task = tokio::spawn(std::future::pending::<()>());
        let abort = task.abort_handle();
        let id = ops.start(OpKind::Delay, move |_| abort);
        assert!(!ops.cancel(99));
        assert!(ops.cancel(id));
        assert!(!ops.cancel(id), "a second cancel finds nothing");
        let err = task.await.expect_err("the task was aborted");
        assert!(err.is_cancelled());
    }

    #[tokio::test]
    async fn refused_ops_are_live_but_not_working() {
        let mut ops = OpTable::new();
        let working = ops.start(OpKind::Http, |_| idle_task());
        let refused = ops.refuse(OpKind::Http);
        assert_eq!((ops.len(), ops.working(OpKind::Http)), (2, 1));
        assert_eq!(ops.working_total(), 1);
        assert!(ops.is_live(refused));
        assert!(ops.retire(refused).is_some());
        assert_eq!(
            ops.working(OpKind::Http),
            1,
            "retiring a refusal frees no slot"
        );
        assert!(ops.cancel(working));
        assert_eq!((ops.len(), ops.working(OpKind::Http)), (0, 0));
    }

    #[tokio::test]
    async fn waits_name_the_earliest_timer_and_whether_an_answer_is_due() {
        let mut ops = OpTable::new();
        assert_eq!(
            ops.waits(),
            Waits {
                only_standing: true,
                next_timer: None
            }
        );
        let now = Instant::now();
        let late = ops.start(OpKind::Delay, |_| idle_task());
        ops.set_due(late, now + std::time::Duration::from_secs(9));
        let soon = ops.start(OpKind::Delay, |_| idle_task());
        ops.set_due(soon, now + std::time::Duration::from_secs(2));
        ops.start(OpKind::Watch, |_| idle_task());
        ops.start(OpKind::StopSignal, |_| idle_task());
        ops.start(OpKind::Stream, |_| idle_task());
        assert_eq!(
            ops.waits(),
            Waits {
                only_standing: true,
                next_timer: Some(now + std::time::Duration::from_secs(2))
            }
        );
        let request = ops.start(OpKind::Http, |_| idle_task());
        assert!(!ops.waits().only_standing, "a request's answer is due");
        ops.cancel(request);
        let send = ops.start(OpKind::StreamSend, |_| idle_task());
        assert!(!ops.waits().only_standing, "a send's answer is due");
        ops.cancel(send);
        let refused = ops.refuse(OpKind::Delay);
        assert!(!ops.waits().only_standing, "a refusal's answer is due");
        ops.retire(refused);
        assert!(ops.waits().only_standing);

        let retired = ops.retire(soon).expect("live");
        assert_eq!(retired.kind, OpKind::Delay);
        assert_eq!(retired.due, Some(now + std::time::Duration::from_secs(2)));
        assert_eq!(
            ops.waits().next_timer,
            Some(now + std::time::Duration::from_secs(9))
        );
        assert_eq!(ops.kind_of(late), Some(OpKind::Delay));
        ops.cancel(late);
        assert_eq!((ops.waits().next_timer, ops.kind_of(late)), (None, None));
    }

    #[tokio::test]
    async fn cancel_all_counts_by_kind() {
        let mut ops = OpTable::new();
        ops.start(OpKind::Watch, |_| idle_task());
        ops.start(OpKind::Http, |_| idle_task());
        ops.start(OpKind::Http, |_| idle_task());
        let counts = ops.cancel_all();
        assert_eq!(counts.total(), 3);
        assert_eq!(counts.of(OpKind::Watch), 1);
        assert_eq!(counts.to_string(), "2 http requests, 1 watch");
        assert!(ops.is_empty());
        assert_eq!(OpCounts::default().to_string(), "no ops");
    }
}
