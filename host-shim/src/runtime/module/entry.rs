//! Entering the guest: the `Store` its instance lives in, the deadline of each entry (the
//! module loop's docs say how it works), and how a failed entry ends the module.

use std::time::Duration;

use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::I32Exit;

use super::outcome::{ModuleError, ModuleOutcome};
use crate::runtime::abi::BadAbiCall;
use crate::runtime::abi::exports::GuestExports;
use crate::runtime::memory_cap::MemoryLimitExceeded;
use crate::runtime::quota::QuotaAbuse;
use crate::runtime::state::HostState;

/// The current entry ran out of time: the epoch callback's error when it ran out of ticks,
/// and an idle poll's (see [`crate::runtime::idle`]) when the guest would block in
/// `poll_oneoff` past its deadline.
#[derive(Debug, thiserror::Error)]
#[error("guest entry deadline exceeded")]
pub(crate) struct EntryDeadlineExceeded;

/// A `Store` for `state`, with its memory cap and its entry deadline installed.
pub(super) fn new_store(engine: &Engine, state: HostState) -> Store<HostState> {
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.memory_cap);
    store.epoch_deadline_callback(|mut cx| {
        let state = cx.data_mut();
        state.entry_ticks += 1;
        if state.entry_ticks >= state.entry_tick_budget {
            Err(wasmtime::Error::new(EntryDeadlineExceeded))
        } else {
            // tokio's own yield lets the scheduler poll its timers and I/O before this task
            // runs again, so other modules progress even on a single thread.
            Ok(UpdateDeadline::YieldCustom(
                1,
                Box::pin(tokio::task::yield_now()),
            ))
        }
    });
    store
}

/// Starts the deadline of one guest entry (and counts the entry).
pub(super) fn arm_deadline(store: &mut Store<HostState>) {
    let state = store.data_mut();
    state.ctx.metrics.count_entry(&state.name);
    state.begin_entry();
    store.set_epoch_deadline(1);
}

/// Records the size of the guest's linear memory.
pub(super) fn record_memory(store: &Store<HostState>, exports: &GuestExports) {
    let bytes = exports.memory.data_size(store);
    let state = store.data();
    state.ctx.metrics.set_memory(&state.name, bytes);
}

/// How the module ends after its entry into the export `during` failed with `err`.
pub(super) fn entry_failed(
    store: &Store<HostState>,
    err: wasmtime::Error,
    during: &'static str,
) -> ModuleOutcome {
    guest_failure(&err, during, store.data().entry_deadline).unwrap_or_else(|| {
        ModuleOutcome::Failed(ModuleError::Trap {
            during,
            reason: trap_reason(&err),
            backtrace: format!("{err:?}"),
        })
    })
}

/// The trap of a failed guest call in one line.
fn trap_reason(err: &wasmtime::Error) -> String {
    match err.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::UnreachableCodeReached) => {
            "wasm `unreachable` instruction executed (a Rust panic aborts this way; see its message \
             in the module's stderr)"
                .to_owned()
        }
        Some(trap) => trap.to_string(),
        None => err.root_cause().to_string(),
    }
}

/// Recognises the ways a guest call ends that are not plain traps: `proc_exit`, a bad ABI
/// call, quota abuse, the memory limit, an entry deadline overrun.
pub(super) fn guest_failure(
    err: &wasmtime::Error,
    during: &'static str,
    deadline: Duration,
) -> Option<ModuleOutcome> {
    if let Some(exit) = err.downcast_ref::<I32Exit>() {
        return Some(ModuleOutcome::Exited(exit.0));
    }
    if let Some(bad) = err.downcast_ref::<BadAbiCall>() {
        return Some(ModuleOutcome::Failed(ModuleError::BadAbiCall(bad.clone())));
    }
    if let Some(abuse) = err.downcast_ref::<QuotaAbuse>() {
        return Some(ModuleOutcome::Failed(ModuleError::QuotaAbuse(
            abuse.clone(),
        )));
    }
    if let Some(over) = err.downcast_ref::<MemoryLimitExceeded>() {
        return Some(ModuleOutcome::Failed(ModuleError::MemoryLimit(*over)));
    }
    if err.downcast_ref::<EntryDeadlineExceeded>().is_some() {
        return Some(ModuleOutcome::Failed(ModuleError::DeadlineExceeded {
            during,
            deadline,
        }));
    }
    None
}
