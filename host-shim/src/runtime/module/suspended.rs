//! A suspended module (see [`crate::runtime::suspend`]): entering that state (the snapshot is
//! written, the `Store` dropped, and the compiled module let go) and leaving it (the compiled
//! module held again, the instance re-created from the snapshot).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use tokio::time::Instant;

use super::compiled::Compiled;
use super::context::ModuleContext;
use super::entry::{new_store, record_memory};
use super::outcome::{ModuleError, ModuleOutcome};
use super::resident::Running;
use super::shell::Shell;
use crate::runtime::abi::exports::GuestExports;
use crate::runtime::state::HostState;
use crate::runtime::suspend::{self, Snapshot};

/// A suspended module: its host state and its snapshot, no `Store`, no hold on its compiled
/// module.
pub(super) struct Suspended {
    state: HostState,
    snapshot: Snapshot,
    since: Instant,
    /// Suspended under memory pressure: how soon it is woken says nothing of its idle
    /// threshold.
    pressed: bool,
}

/// What became of a suspend attempt.
pub(super) enum Suspend {
    /// The module is suspended.
    Done(Box<Suspended>),
    /// The snapshot could not be written: the module stays resident.
    Resident(Box<Running>),
    /// The host lost the module (a panic in the blocking task); its ops are released by the
    /// completion queue closing.
    Lost(ModuleOutcome),
}

/// Snapshots the module and drops its `Store` (see [`crate::runtime::suspend`]). The snapshot is
/// written on a blocking thread.
pub(super) async fn suspend(
    running: Box<Running>,
    cx: &ModuleContext<'_>,
    shell: &mut Shell,
) -> Suspend {
    let Some(instance) = running.instance else {
        // Not instantiated: nothing to snapshot, and no reason to try again.
        shell.idle = None;
        return Suspend::Resident(running);
    };
    let Some(idle) = &mut shell.idle else {
        return Suspend::Resident(running);
    };
    let name = shell.name.clone();
    let metrics = running.store.data().ctx.metrics.clone();
    let dir = match cx.snapshots.get() {
        Ok(dir) => dir.to_owned(),
        Err(why) => {
            tracing::debug!("module `{name}` stays resident: {why}");
            metrics.suspend_failed(&name);
            idle.threshold.suspend_failed(Instant::now());
            return Suspend::Resident(running);
        }
    };
    let started = Instant::now();
    let layout = idle.layout.clone();
    let pressed = idle.pressure.now();
    let Running {
        store,
        instance: _,
        exports,
        slot,
        held,
    } = *running;
    let task_name = name.clone();
    let written = tokio::task::spawn_blocking(move || {
        let mut store = store;
        let captured = std::panic::catch_unwind(AssertUnwindSafe(|| {
            suspend::capture(&mut store, &instance, &layout, &dir, &task_name, pressed)
        }))
        .unwrap_or_else(|_| Err("the snapshot writer panicked".into()));
        match captured {
            // Dropping the store here releases the instance and its memory, then the
            // compiled module if no other instance holds it.
            Ok(snapshot) => {
                let state = store.into_data();
                drop(held);
                drop(slot);
                // The instance's allocations (its `VMContext`, tens of KiB), and the
                // module's metadata if it was dropped, are free now, and would stay resident
                // between the host state of the modules still there. A trim walks the whole
                // heap, which grows with the modules: the suspends of a second share one (one
                // a suspend made each event's CPU grow with the number of modules).
                crate::heap::trim_soon();
                Ok((state, snapshot))
            }
            Err(why) => Err((store, slot, held, why)),
        }
    })
    .await;
    match written {
        Ok(Ok((state, snapshot))) => {
            let took = started.elapsed();
            idle.cost.suspended_in(took);
            metrics.suspended(&name, took, snapshot.file_bytes());
            tracing::debug!(
                "module `{name}` suspended: {} bytes of memory in a snapshot of {} bytes, in {took:?}",
                snapshot.memory_bytes(),
                snapshot.file_bytes()
            );
            Suspend::Done(Box::new(Suspended {
                state,
                snapshot,
                since: Instant::now(),
                pressed,
            }))
        }
        Ok(Err((store, slot, held, why))) => {
            metrics.suspend_failed(&name);
            let next = shell.idle.as_mut().map(|idle| {
                idle.threshold.suspend_failed(Instant::now());
                idle.threshold.current()
            });
            tracing::warn!(
                "module `{name}` stays resident: its snapshot could not be written ({why}); \
                 next attempt after {next:?} idle"
            );
            Suspend::Resident(Box::new(Running {
                store,
                instance: Some(instance),
                exports,
                slot,
                held,
            }))
        }
        Err(join) => Suspend::Lost(ModuleOutcome::Failed(ModuleError::Internal(format!(
            "the snapshot task failed: {join}"
        )))),
    }
}

impl Suspended {
    /// The module's host state, kept while it is suspended.
    pub(super) fn state(&self) -> &HostState {
        &self.state
    }

    /// Holds `compiled` again (mapping it again if no instance held it) and re-creates the
    /// instance from the snapshot (see [`crate::runtime::suspend`]); the file is removed. A
    /// `planned` resume (ahead of a timer, or by one), or one of a module suspended under
    /// memory pressure, leaves the idle threshold as it is; any other tells it how long the
    /// module stayed suspended.
    ///
    /// # Errors
    /// How the module ends if it cannot be resumed; its ops are then aborted if its host
    /// state survived.
    pub(super) async fn resume(
        self,
        cx: &ModuleContext<'_>,
        compiled: &Arc<Compiled>,
        shell: &mut Shell,
        planned: bool,
    ) -> Result<Box<Running>, ModuleOutcome> {
        let started = Instant::now();
        let Suspended {
            mut state,
            snapshot,
            since,
            pressed,
        } = self;
        let name = shell.name.clone();
        let metrics = state.ctx.metrics.clone();
        let Some(layout) = shell.idle.as_ref().map(|idle| idle.layout.clone()) else {
            return Err(ModuleOutcome::Failed(ModuleError::Internal(
                "a suspended module has no snapshot layout".into(),
            )));
        };
        let failed = |state: &mut HostState, shell: &Shell, why: String| {
            metrics.resumed(&name, None);
            shell.cancel_ops(&mut state.ops);
            Err(ModuleOutcome::Failed(ModuleError::Resume(why)))
        };
        let slot = match shell.take_slot(cx.slots, state.asked_for_stop).await {
            Ok(slot) => slot,
            Err(outcome) => {
                metrics.resumed(&name, None);
                shell.cancel_ops(&mut state.ops);
                return Err(outcome);
            }
        };
        let held = match compiled.hold_async().await {
            Ok(held) => held,
            Err(err) => return failed(&mut state, shell, err.to_string()),
        };
        let mut store = new_store(cx.engine, state);
        store.data_mut().begin_entry();
        store.set_epoch_deadline(1);
        let instance = match held.pre().instantiate_async(&mut store).await {
            Ok(instance) => instance,
            Err(err) => {
                return failed(
                    store.data_mut(),
                    shell,
                    format!("instantiating again: {err:?}"),
                );
            }
        };
        let restored = tokio::task::spawn_blocking(move || {
            let mut store = store;
            let restored = std::panic::catch_unwind(AssertUnwindSafe(|| {
                suspend::restore(&mut store, &instance, &layout, &snapshot)
            }))
            .unwrap_or_else(|_| Err("the snapshot reader panicked".into()));
            // Removes the file.
            drop(snapshot);
            (store, restored)
        })
        .await;
        let mut store = match restored {
            Ok((store, Ok(()))) => store,
            Ok((mut store, Err(why))) => return failed(store.data_mut(), shell, why),
            Err(join) => {
                metrics.resumed(&name, None);
                return Err(ModuleOutcome::Failed(ModuleError::Internal(format!(
                    "the snapshot task failed: {join}"
                ))));
            }
        };
        let exports = match GuestExports::resolve(&mut store, &instance) {
            Ok(exports) => exports,
            Err(e) => return failed(store.data_mut(), shell, e.to_string()),
        };
        let took = started.elapsed();
        let suspended_for = since.elapsed();
        if let Some(idle) = &mut shell.idle {
            if !planned && !pressed {
                idle.threshold.resumed_after(suspended_for);
            }
            idle.ahead.resumed_in(took);
            idle.cost.resumed_in(took);
        }
        metrics.resumed(&name, Some(took));
        tracing::debug!(
            "module `{name}` resumed ({}) after {suspended_for:?} suspended, in {took:?}; idle threshold now {:?}",
            if planned { "for a timer" } else { "unforeseen" },
            shell.idle.as_ref().map(|idle| idle.threshold.current())
        );
        record_memory(&store, &exports);
        Ok(Box::new(Running {
            store,
            instance: Some(instance),
            exports: Some(exports),
            slot,
            held,
        }))
    }

    /// Aborts every live op of the suspended module; its snapshot is removed when it is
    /// dropped.
    pub(super) fn finish(&mut self, shell: &Shell) {
        self.state.ctx.metrics.resumed(&shell.name, None);
        shell.cancel_ops(&mut self.state.ops);
    }
}
