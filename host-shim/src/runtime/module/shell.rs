//! What a module keeps whether it is resident or suspended: its completion queue, the host's
//! stop phase, when it was last entered and woken unforeseen, when it is suspended and
//! resumed; and the one wait of the module loop on them.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::outcome::{EndReason, ModuleError, ModuleOutcome};
use crate::runtime::engine::{EntryTicks, EpochTicker};
use crate::runtime::fiber_stacks::StackOwner;
use crate::runtime::instance_slots::{InstanceSlot, InstanceSlots};
use crate::runtime::ops::{CompletionReceiver, OpTable, QueuedCompletion, Waits};
use crate::runtime::shadow_stack::ShadowStack;
use crate::runtime::stop::Phase;
use crate::runtime::suspend::{
    IdleThreshold, MemoryPressure, ResumeAhead, SnapshotLayout, SuspendCost,
};

/// The suspend state of a module that may be suspended.
pub(super) struct Idle {
    pub(super) layout: Arc<SnapshotLayout>,
    pub(super) threshold: IdleThreshold,
    pub(super) ahead: ResumeAhead,
    /// The host's suspend and resume times.
    pub(super) cost: SuspendCost,
    /// Whether the host is under memory pressure: then the module is suspended as soon as
    /// it is idle.
    pub(super) pressure: MemoryPressure,
}

/// When an idle module's fiber stack (see [`crate::runtime::fiber_stacks`]) and the dead
/// pages of its shadow stack (see [`crate::runtime::shadow_stack`]) are released.
pub(super) struct StackRelease {
    /// How long the module must not have been entered first.
    pub(super) after: Duration,
    /// Whether this module entered the guest since it last asked for a release.
    pub(super) armed: bool,
    /// When its last entry ended (taken after the code counted it as ended).
    pub(super) last_exit: Instant,
    /// Where its guest keeps its shadow stack, if that is known (released by
    /// [`Running::release_shadow_stack`](super::resident::Running::release_shadow_stack)).
    pub(super) shadow_stack: Option<ShadowStack>,
}

/// What a module keeps whether it is resident or suspended.
pub(super) struct Shell {
    pub(super) completions: CompletionReceiver,
    pub(super) phase: watch::Receiver<Phase>,
    /// Whether the stop handle still exists (a dropped one means no stop will ever come).
    pub(super) phase_open: bool,
    pub(super) name: Arc<str>,
    /// `None`: never suspended.
    pub(super) idle: Option<Idle>,
    /// When the guest was last entered.
    pub(super) last_entry: Instant,
    /// When the guest was last entered for something it could not foresee (see
    /// [`OpKind::is_unforeseen`](crate::runtime::ops::OpKind::is_unforeseen)), or started.
    pub(super) last_unforeseen: Instant,
    /// `None`: its stacks are never released.
    pub(super) release: Option<StackRelease>,
    /// The fiber stacks of its stores.
    pub(super) stacks: StackOwner,
}

/// What woke the module loop.
pub(super) enum Wake {
    /// The stop phase changed, or nothing that needs handling happened: look again.
    Look,
    /// A completion arrived (perhaps of an op that is no longer live).
    Completion(QueuedCompletion),
    /// The state's planned change is due: a resident module has been idle for its
    /// threshold (suspend it), or a suspended one's earliest timer is near (resume it).
    Due,
    /// The module has not been entered for the release time: release its stacks.
    ReleaseStacks,
}

impl Shell {
    /// How the host's stop phase ends this module now, if it does.
    pub(super) fn ended_by_phase(&mut self, asked_for_stop: bool) -> Option<ModuleOutcome> {
        match *self.phase.borrow_and_update() {
            Phase::Kill => Some(ModuleOutcome::Ended(EndReason::StopTimeout)),
            Phase::Stopping if !asked_for_stop => {
                Some(ModuleOutcome::Ended(EndReason::NeverAskedForStop))
            }
            Phase::Running | Phase::Stopping => None,
        }
    }

    /// An instance slot for the module (see [`crate::runtime::instance_slots`]), waiting for
    /// one if none is free; or how the host's stop phase ends the module while it waits
    /// (see [`ended_by_phase`](Self::ended_by_phase): a module that asked for the stop signal
    /// keeps waiting while the host stops, to be given it). A module that suspends is
    /// admitted against the memory pressure first ([`MemoryPressure::admit`]).
    pub(super) async fn take_slot(
        &mut self,
        slots: &InstanceSlots,
        asked_for_stop: bool,
    ) -> Result<InstanceSlot, ModuleOutcome> {
        let suspends = match &self.idle {
            Some(idle) => {
                idle.pressure.admit();
                true
            }
            None => false,
        };
        if let Some(slot) = slots.try_acquire(suspends) {
            return Ok(slot);
        }
        let name = self.name.clone();
        let acquire = slots.acquire(&name, suspends);
        tokio::pin!(acquire);
        loop {
            if let Some(outcome) = self.ended_by_phase(asked_for_stop) {
                return Err(outcome);
            }
            tokio::select! {
                biased;
                changed = self.phase.changed(), if self.phase_open => {
                    self.phase_open = changed.is_ok();
                }
                slot = &mut acquire => {
                    // Given back by a module the stop ended: the stop may end this one too.
                    return match self.ended_by_phase(asked_for_stop) {
                        Some(outcome) => Err(outcome),
                        None => Ok(slot),
                    };
                }
            }
        }
    }

    /// How the module ended if it returned from its last entry with no live op and without
    /// exiting: its `main` returned (SPEC.md, "Lifecycle") — a plain `fn main()` that did its
    /// work and returned, as a native process whose `main` returns, which exits with status
    /// 0. Nothing could enter it again. (A kube-wasm guest whose `main` is blocked keeps an
    /// op live, so it is not taken for finished.) A reactor module (ABI 1.4) in that state is
    /// deadlocked instead: its runtime exits when `main` returns, so it never returns into
    /// an entry; it stalled with no op and no timer that could wake it.
    pub(super) fn main_returned(&self, ops: &OpTable, reactor: bool) -> Option<ModuleOutcome> {
        if !ops.is_empty() {
            return None;
        }
        if reactor {
            return Some(ModuleOutcome::Failed(ModuleError::Deadlocked));
        }
        tracing::debug!(
            "module `{}` returned with no pending operation: its main returned",
            self.name
        );
        Some(ModuleOutcome::Exited(0))
    }

    /// When a resident module whose ops wait as `waits` says is suspended if nothing wakes
    /// it first (see [`IdleThreshold::suspend_at`]; under memory pressure with no idle
    /// period, [`IdleThreshold::at_once`]). Only a running host suspends modules; `None`
    /// also when the instant overflows.
    pub(super) fn suspend_at(&self, waits: Waits) -> Option<Instant> {
        match (&self.idle, *self.phase.borrow()) {
            (Some(idle), Phase::Running) => if idle.pressure.now() {
                idle.threshold.at_once()
            } else {
                idle.threshold
            }
            .suspend_at(
                Instant::now(),
                self.last_entry,
                self.last_unforeseen,
                waits,
                idle.cost.round_trip(),
            ),
            _ => None,
        }
    }

    /// Whether the module may be suspended, between its timers too (see
    /// [`SuspendPolicy::between_timers`](crate::runtime::suspend::SuspendPolicy::between_timers)).
    pub(super) fn between_timers(&self) -> bool {
        self.idle
            .as_ref()
            .is_some_and(|idle| idle.threshold.between_timers())
    }

    /// When a suspended module whose ops wait as `waits` says is resumed if nothing wakes it
    /// first: just ahead of its earliest timer (see [`ResumeAhead`]); `None` without a timer,
    /// or if its policy does not suspend it between timers.
    pub(super) fn resume_at(&self, waits: Waits) -> Option<Instant> {
        if !self.between_timers() {
            return None;
        }
        let idle = self.idle.as_ref()?;
        let due = waits.next_timer?;
        Some(
            idle.ahead
                .resume_at(due, idle.threshold.timer_gap(idle.cost.round_trip())),
        )
    }

    /// Begins a guest entry: the epoch ticks (see [`EpochTicker::enter`]) until the guard
    /// is given to [`exit`](Self::exit) or dropped, and the next stack release is armed.
    pub(super) fn enter(&mut self, ticker: &EpochTicker) -> EntryTicks {
        if let Some(release) = self.release.as_mut() {
            release.armed = true;
        }
        ticker.enter()
    }

    /// Ends what [`enter`](Self::enter) began: the release time counts from now.
    pub(super) fn exit(&mut self, entered: EntryTicks) {
        drop(entered);
        if let Some(release) = &mut self.release {
            release.last_exit = Instant::now();
        }
    }

    /// When the module's stacks are released if nothing wakes the module first: the release
    /// time after its last entry ended, once per entry.
    pub(super) fn release_at(&self) -> Option<Instant> {
        let release = self.release.as_ref().filter(|r| r.armed)?;
        release.last_exit.checked_add(release.after)
    }

    /// Releases the module's fiber stack and disarms the release until the module is
    /// entered again.
    ///
    /// # Safety
    /// The module's store must not be inside an entry (see [`StackOwner::release`]): call it
    /// from the module loop only, between entries.
    pub(super) unsafe fn release_idle(&mut self) {
        let Some(release) = self.release.as_mut() else {
            return;
        };
        release.armed = false;
        // SAFETY: by this function's contract, no fiber runs on the stacks.
        let bytes = unsafe { self.stacks.release() };
        tracing::trace!(
            "module `{}`: released {bytes} bytes of idle fiber stack",
            self.name
        );
    }

    /// Waits for a change of the stop phase, then a completion, then (at `due_at`, if any)
    /// the state's planned change, then (at `release_at`, if any) the stack release time, in
    /// that order of priority; a `resident` module also for a change of the host's memory
    /// pressure, which changes when it is suspended.
    pub(super) async fn wait(
        &mut self,
        due_at: Option<Instant>,
        release_at: Option<Instant>,
        resident: bool,
    ) -> Wake {
        let first = match (due_at, release_at) {
            (Some(due), Some(release)) => Some(due.min(release)),
            (due, release) => due.or(release),
        };
        let pressure = self.idle.as_mut().map(|idle| &mut idle.pressure);
        let pressure_changed = async move {
            match pressure {
                Some(pressure) => pressure.changed().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            changed = self.phase.changed(), if self.phase_open => {
                // A dropped stop handle means no stop will ever come.
                self.phase_open = changed.is_ok();
                Wake::Look
            }
            delivery = self.completions.recv() => match delivery {
                Some(delivery) => Wake::Completion(*delivery),
                // The host state holds a sender, so the channel cannot close.
                None => Wake::Look,
            },
            // Biased: reached only when no completion is waiting. One timer for both times
            // (each costs a module's task room for as long as it waits).
            () = tokio::time::sleep_until(first.unwrap_or_else(Instant::now)), if first.is_some() => {
                if due_at.is_some_and(|due| due <= Instant::now()) {
                    Wake::Due
                } else {
                    Wake::ReleaseStacks
                }
            }
            () = pressure_changed, if resident => Wake::Look,
        }
    }

    /// Aborts every live op in `ops` and logs what was cancelled: their requests and
    /// watches are dropped, which closes them upstream.
    pub(super) fn cancel_ops(&self, ops: &mut OpTable) {
        let counts = ops.cancel_all();
        if counts.total() > 0 {
            tracing::info!("cancelled {counts} of module `{}`", self.name);
        }
    }
}
