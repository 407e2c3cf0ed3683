//! A resident module: its `Store` and instance, started from `_start` and fed completions.

use kube_wasm_abi::names::{EXPORT_ABI_VERSION, EXPORT_START};
use tokio::time::Instant;
use wasmtime::{Instance, Store};

use super::compiled::Held;
use super::deliver::deliver;
use super::entry::{arm_deadline, entry_failed, guest_failure, record_memory};
use super::outcome::{ModuleError, ModuleOutcome};
use super::shell::Shell;
use crate::runtime::abi::exports::{GuestExports, check_version};
use crate::runtime::ops::{OpKind, QueuedCompletion};
use crate::runtime::state::HostState;

/// A resident module: between `Store` creation and its end or suspension.
pub(super) struct Running {
    pub(super) store: Store<HostState>,
    pub(super) instance: Option<Instance>,
    pub(super) exports: Option<GuestExports>,
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

        arm_deadline(&mut self.store);
        let packed = exports
            .abi_version
            .call_async(&mut self.store, ())
            .await
            .map_err(|err| entry_failed(&self.store, err, EXPORT_ABI_VERSION))?;
        check_version(packed as u32).map_err(|e| ModuleOutcome::Failed(e.into()))?;
        self.store.data_mut().abi_minor = kube_wasm_abi::unpack_version(packed as u32).1;

        tracing::debug!("calling `_start`");
        arm_deadline(&mut self.store);
        let started = exports
            .start
            .call_async(&mut self.store, ())
            .await
            .map_err(|err| entry_failed(&self.store, err, EXPORT_START));
        record_memory(&self.store, &exports);
        started?;
        shell.last_entry = Instant::now();
        Ok(())
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
        let delivered = deliver(&mut self.store, &exports, delivery.op, &delivery.frame).await;
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
