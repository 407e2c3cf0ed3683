//! The soak's account of its changes: every change the driver made to a source ConfigMap and
//! every state of its mirror Secret the driver saw, and from them when each change was
//! reconciled. Times are seconds on the run's clock (see [`super::clock::Clock`]).
//!
//! A source's changes carry increasing sequence numbers: a put writes its number into the
//! ConfigMap's data (the mirror copies it into the Secret), a delete removes the ConfigMap (the
//! mirror deletes the Secret). A change is reconciled by the first sight of the Secret in a
//! state as new as the change or newer — a Secret holding that number or a later one, or no
//! Secret after a delete at least as new was begun — so a change overtaken by the next one
//! before its module got to it counts as reconciled when the newer state shows.

use std::collections::BTreeMap;

use serde::Serialize;

use super::downtime::Downtime;

/// A source ConfigMap: source `index` of healthy module `module`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SourceId {
    /// The module (its namespace) it belongs to.
    pub module: usize,
    /// Which of the module's sources.
    pub index: usize,
}

/// What a change did to its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ChangeKind {
    /// Created or updated it, with the change's sequence number as its data.
    Put,
    /// Deleted it.
    Delete,
}

/// One change the driver made.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Change {
    /// The source changed.
    pub source: SourceId,
    /// Its sequence number, increasing per source.
    pub seq: u64,
    /// Put or delete.
    pub kind: ChangeKind,
    /// When the first attempt to write it was sent (an attempt whose answer was lost may have
    /// written it).
    pub first_try: f64,
    /// When the attempt the API server answered was sent: the change's time.
    pub sent: f64,
}

/// A state of a mirror Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Seen {
    /// The Secret exists holding this sequence number.
    Present(u64),
    /// There is no Secret.
    Absent,
}

/// One sight of a mirror Secret.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Observation {
    /// The source the Secret mirrors.
    pub source: SourceId,
    /// What was seen.
    pub seen: Seen,
    /// When.
    pub at: f64,
}

/// A change and when it was reconciled.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Outcome {
    /// The change.
    pub change: Change,
    /// When its state (or a newer one) was first seen; `None`: never.
    pub reconciled_at: Option<f64>,
}

impl Outcome {
    /// Seconds from the change to its reconciliation (0 when it was seen before the answered
    /// attempt was sent); `None` if never reconciled.
    pub fn latency(&self) -> Option<f64> {
        self.reconciled_at
            .map(|at| (at - self.change.sent).max(0.0))
    }

    /// The latency less the time the API server was down meanwhile (`downtime`), or, for a
    /// change never reconciled, the time since the change up to `end` less that downtime.
    pub fn stall(&self, downtime: &Downtime, end: f64) -> f64 {
        let to = self.reconciled_at.unwrap_or(end).max(self.change.sent);
        (to - self.change.sent - downtime.overlap(self.change.sent, to)).max(0.0)
    }
}

/// Every change and every observation of a run.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    changes: BTreeMap<SourceId, Vec<Change>>,
    observations: BTreeMap<SourceId, Vec<Observation>>,
}

impl Ledger {
    /// Records a change; a source's changes must come in sequence order.
    pub fn change(&mut self, change: Change) {
        self.changes.entry(change.source).or_default().push(change);
    }

    /// Records an observation; a source's observations must come in time order.
    pub fn observe(&mut self, observation: Observation) {
        self.observations
            .entry(observation.source)
            .or_default()
            .push(observation);
    }

    /// The number of changes recorded.
    pub fn changes(&self) -> usize {
        self.changes.values().map(Vec::len).sum()
    }

    /// The last change of every source.
    pub fn last_changes(&self) -> Vec<Change> {
        self.changes
            .values()
            .filter_map(|c| c.last().copied())
            .collect()
    }

    /// Every change with when it was reconciled, source by source in sequence order.
    pub fn outcomes(&self) -> Vec<Outcome> {
        let mut outcomes = Vec::with_capacity(self.changes());
        let none = Vec::new();
        for (source, changes) in &self.changes {
            let observations = self.observations.get(source).unwrap_or(&none);
            outcomes.extend(reconcile(changes, observations));
        }
        outcomes
    }

    /// Whether every source's last change has been reconciled.
    pub fn converged(&self) -> bool {
        let outcomes = self.outcomes();
        self.last_changes().iter().all(|last| {
            outcomes
                .iter()
                .any(|o| o.change == *last && o.reconciled_at.is_some())
        })
    }
}

/// The outcomes of one source's `changes` (sequence order) given its `observations` (time
/// order): walking the observations, the newest state reached so far; each change is
/// reconciled at the first observation whose state reaches its number.
fn reconcile(changes: &[Change], observations: &[Observation]) -> Vec<Outcome> {
    let deletes: Vec<&Change> = changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Delete)
        .collect();
    let mut reached: Option<u64> = None;
    let mut next_delete = 0;
    let mut latest_delete: Option<u64> = None;
    let mut next_change = 0;
    let mut outcomes = Vec::with_capacity(changes.len());
    for observation in observations {
        while let Some(d) = deletes.get(next_delete)
            && d.first_try <= observation.at
        {
            latest_delete = Some(d.seq);
            next_delete += 1;
        }
        let state = match observation.seen {
            Seen::Present(seq) => Some(seq),
            Seen::Absent => latest_delete,
        };
        reached = reached.max(state);
        while let Some(change) = changes.get(next_change)
            && reached.is_some_and(|r| r >= change.seq)
        {
            outcomes.push(Outcome {
                change: *change,
                reconciled_at: Some(observation.at),
            });
            next_change += 1;
        }
    }
    outcomes.extend(changes[next_change..].iter().map(|change| Outcome {
        change: *change,
        reconciled_at: None,
    }));
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: SourceId = SourceId {
        module: 0,
        index: 0,
    };

    fn put(seq: u64, sent: f64) -> Change {
        Change {
            source: S,
            seq,
            kind: ChangeKind::Put,
            first_try: sent,
            sent,
        }
    }

    fn seen(seen: Seen, at: f64) -> Observation {
        Observation {
            source: S,
            seen,
            at,
        }
    }

    fn reconciled(ledger: &Ledger) -> Vec<Option<f64>> {
        ledger.outcomes().iter().map(|o| o.reconciled_at).collect()
    }

    #[test]
    fn puts_are_reconciled_by_their_number_or_a_later_one() {
        let mut l = Ledger::default();
        for c in [put(0, 0.0), put(1, 1.0), put(2, 1.5), put(3, 5.0)] {
            l.change(c);
        }
        l.observe(seen(Seen::Absent, 0.1));
        l.observe(seen(Seen::Present(0), 0.5));
        // 1 overtaken by 2 before its module got to it.
        l.observe(seen(Seen::Present(2), 2.0));
        assert_eq!(reconciled(&l), [Some(0.5), Some(2.0), Some(2.0), None]);
        assert!(!l.converged());
        let outcomes = l.outcomes();
        assert_eq!(outcomes[1].latency(), Some(1.0));
        assert_eq!(outcomes[3].latency(), None);
        // Never reconciled: it has stalled since it was sent, less the downtime.
        let mut down = Downtime::default();
        down.add(6.0, 8.0);
        assert_eq!(outcomes[3].stall(&down, 10.0), 3.0);
        l.observe(seen(Seen::Present(3), 9.0));
        assert!(l.converged());
        assert_eq!(l.outcomes()[3].stall(&down, 10.0), 2.0);
    }

    #[test]
    fn deletes_are_reconciled_by_absence_after_they_began() {
        let mut l = Ledger::default();
        let mut delete = put(2, 3.0);
        delete.kind = ChangeKind::Delete;
        // Its first attempt's answer was lost; the second was answered.
        delete.first_try = 2.5;
        for c in [put(1, 1.0), delete, put(3, 6.0)] {
            l.change(c);
        }
        l.observe(seen(Seen::Present(1), 1.2));
        // Absent before the delete began does not count (e.g. a stale relist).
        l.observe(seen(Seen::Absent, 2.0));
        l.observe(seen(Seen::Absent, 2.8));
        assert_eq!(reconciled(&l), [Some(1.2), Some(2.8), None]);
        assert_eq!(l.outcomes()[1].latency(), Some(0.0));
        // Absence while the re-created source waits does not reconcile the put.
        l.observe(seen(Seen::Absent, 6.5));
        l.observe(seen(Seen::Present(3), 7.0));
        assert_eq!(reconciled(&l), [Some(1.2), Some(2.8), Some(7.0)]);
    }

    #[test]
    fn a_missed_delete_is_covered_by_the_next_put() {
        let mut l = Ledger::default();
        let mut delete = put(2, 3.0);
        delete.kind = ChangeKind::Delete;
        for c in [put(1, 1.0), delete, put(3, 4.0)] {
            l.change(c);
        }
        l.observe(seen(Seen::Present(1), 1.5));
        l.observe(seen(Seen::Present(3), 4.5));
        assert_eq!(reconciled(&l), [Some(1.5), Some(4.5), Some(4.5)]);
        assert!(l.converged());
    }
}
