//! A resident module: its `Store` and instance, started from `_start` and fed completions.

use kube_wasm_abi::Completion;
use kube_wasm_abi::names::{
    EXPORT_ABI_VERSION, EXPORT_INITIALIZE, EXPORT_REACTOR_START, EXPORT_START, EXPORT_WAKE,
};
use tokio::time::Instant;
use wasmtime::{Instance, Store};

use super::compiled::Held;
use super::deliver::deliver;
use super::entry::{arm_deadline, entry_failed, guest_failure, record_memory};
use super::outcome::{ModuleError, ModuleOutcome};
use super::shell::Shell;
use crate::runtime::abi::exports::{Entry, GuestExports, check_version};
use crate::runtime::abi::spawn_op;
use crate::runtime::instance_slots::InstanceSlot;
use crate::runtime::ops::{OpKind, QueuedCompletion};
use crate::runtime::quota::HeldBytes;
use crate::runtime::state::HostState;

/// A resident module: between `Store` creation and its end or suspension.
pub(super) struct Running {
    pub(super) store: Store<HostState>,
    pub(super) instance: Option<Instance>,
    pub(super) exports: Option<GuestExports>,
    /// Its instance slot; after the `Store`, so that it is given back once the instance's
    /// mappings are gone.
    pub(super) slot: InstanceSlot,
    /// Its hold on the compiled module; last, so that it is dropped after the `Store`.
    pub(super) held: Held,
}

impl Running {
    /// Releases the dead pages of the guest's shadow stack (see
    /// [`ShadowStack::release`](crate::runtime::shadow_stack::ShadowStack::release)) if
    /// the shell's idle release knows where it is; after a failure (logged) it no longer
    /// tries. Nothing before `_start` made an instance.
    ///
    /// # Safety
    /// No call of the store may be in progress (between entries only).
    pub(super) unsafe fn release_shadow_stack(&mut self, shell: &mut Shell) {
        let Some(release) = shell.release.as_mut() else {
            return;
        };
        let (Some(stack), Some(instance), Some(exports)) =
            (&release.shadow_stack, &self.instance, &self.exports)
        else {
            return;
        };
        let name = &shell.name;
        // SAFETY: by this function's contract.
        match unsafe { stack.release(&mut self.store, instance, &exports.memory) } {
            Ok(bytes) => {
                tracing::trace!("module `{name}`: released {bytes} bytes of shadow stack");
            }
            Err(err) => {
                tracing::warn!(
                    "module `{name}`: its shadow stack cannot be released ({err}); it stays resident"
                );
                release.shadow_stack = None;
            }
        }
    }

    /// Instantiates the module, checks its ABI version and runs `_start`.
    pub(super) async fn start(&mut self, shell: &mut Shell) -> Result<(), ModuleOutcome> {
        arm_deadline(&mut self.store);
        let instance = match self.held.pre().instantiate_async(&mut self.store).await {
            Ok(instance) => instance,
            Err(err) => {
                return Err(
                    match guest_failure(&err, "start section", self.store.data().entry_deadline) {
                        Some(outcome) => outcome,
                        None => ModuleOutcome::Failed(ModuleError::Instantiate(format!("{err:?}"))),
                    },
                );
            }
        };
        self.instance = Some(instance);
        let exports = GuestExports::resolve(&mut self.store, &instance)
            .map_err(|e| ModuleOutcome::Failed(e.into()))?;
        self.exports = Some(exports.clone());

        // A WASI reactor is initialised before any other export is called (Go's exports trap
        // before its runtime is).
        if let Entry::Reactor {
            initialize: Some(initialize),
            ..
        } = &exports.entry
        {
            tracing::debug!("calling `{EXPORT_INITIALIZE}`");
            arm_deadline(&mut self.store);
            initialize
                .call_async(&mut self.store, ())
                .await
                .map_err(|err| entry_failed(&self.store, err, EXPORT_INITIALIZE))?;
        }
        arm_deadline(&mut self.store);
        let packed = exports
            .abi_version
            .call_async(&mut self.store, ())
            .await
            .map_err(|err| entry_failed(&self.store, err, EXPORT_ABI_VERSION))?;
        check_version(packed as u32).map_err(|e| ModuleOutcome::Failed(e.into()))?;
        self.store.data_mut().abi_minor = kube_wasm_abi::unpack_version(packed as u32).1;

        let started = match &exports.entry {
            Entry::Command { start } => {
                tracing::debug!("calling `{EXPORT_START}`");
                arm_deadline(&mut self.store);
                start
                    .call_async(&mut self.store, ())
                    .await
                    .map_err(|err| entry_failed(&self.store, err, EXPORT_START))
            }
            Entry::Reactor { start, .. } => {
                self.store.data_mut().reactor = true;
                tracing::debug!("calling `{EXPORT_REACTOR_START}`");
                arm_deadline(&mut self.store);
                start
                    .call_async(&mut self.store, ())
                    .await
                    .map_err(|err| entry_failed(&self.store, err, EXPORT_REACTOR_START))
            }
        };
        record_memory(&self.store, &exports);
        started?;
        self.rearm_wake();
        shell.last_entry = Instant::now();
        Ok(())
    }

    /// After an entry into a reactor module: keeps its wake op if its last idle poll named
    /// the same next timer, else replaces it with one for the new timer (or none). The wake
    /// op is the host's: it counts as a timer for suspension, but not against quotas.
    fn rearm_wake(&mut self) {
        let state = self.store.data_mut();
        if !state.reactor {
            return;
        }
        let next = state.idle.take_polled().flatten();
        if let Some((id, due)) = state.wake.take() {
            if Some(due) == next && state.ops.is_live(id) {
                state.wake = Some((id, due));
                return;
            }
            state.ops.cancel(id);
        }
        let Some(due) = next else { return };
        let id = spawn_op(
            state,
            OpKind::Wake,
            HeldBytes::default(),
            move |_, sink, _| async move {
                tokio::time::sleep_until(due).await;
                sink.send(&Completion::Elapsed {}, b"").await
            },
        );
        state.ops.set_due(id, due);
        state.wake = Some((id, due));
    }

    /// Calls a reactor module's `kube_wasm_wake`: its next timer fell due.
    async fn wake(&mut self, exports: &GuestExports) -> Result<(), ModuleOutcome> {
        let Entry::Reactor { wake, .. } = &exports.entry else {
            return Ok(());
        };
        arm_deadline(&mut self.store);
        let woken = wake
            .call_async(&mut self.store, ())
            .await
            .map_err(|err| entry_failed(&self.store, err, EXPORT_WAKE));
        record_memory(&self.store, exports);
        woken
    }

    /// Delivers one completion of a live op of `kind`, and retires the op if it is its final
    /// one; a timer's lateness (from when it fell due to this entry) is observed.
    pub(super) async fn deliver(
        &mut self,
        delivery: QueuedCompletion,
        kind: OpKind,
        shell: &mut Shell,
    ) -> Result<(), ModuleOutcome> {
        let Some(exports) = self.exports.clone() else {
            return Ok(());
        };
        let entering = Instant::now();
        let state = self.store.data_mut();
        if delivery.is_final
            && let Some(retired) = state.ops.retire(delivery.op)
        {
            let metrics = &state.ctx.metrics;
            metrics.observe_op(&shell.name, retired.kind.label(), retired.lived);
            if let Some(due) = retired.due {
                metrics.observe_timer_lateness(entering.saturating_duration_since(due));
            }
        }
        let delivered = if kind == OpKind::Wake {
            self.store.data_mut().wake = None;
            self.wake(&exports).await
        } else {
            deliver(&mut self.store, &exports, delivery.op, &delivery.frame).await
        };
        if delivered.is_ok() {
            self.rearm_wake();
        }
        shell.last_entry = Instant::now();
        if kind.is_unforeseen() {
            shell.last_unforeseen = shell.last_entry;
        }
        delivered
    }

    /// Aborts every live op and logs what was cancelled.
    pub(super) fn finish(&mut self, shell: &Shell) {
        shell.cancel_ops(&mut self.store.data_mut().ops);
    }
}
