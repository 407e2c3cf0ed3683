//! `delay(millis) -> op`: a timer that completes with `elapsed` after `millis` milliseconds
//! (negative counts as 0), or at once with an `error` of code `quota` if the module is at its
//! quota of pending ops (ABI 1.3). Cancelling it drops the timer. The op table records when it
//! falls due, so a suspended module is resumed just before (see
//! [`crate::runtime::suspend::policy`]).

use std::time::Duration;

use kube_wasm_abi::Completion;
use kube_wasm_abi::names::{IMPORT_DELAY, IMPORT_MODULE};
use wasmtime::{Caller, Linker};

use super::op::start_op;
use super::op_to_wasm;
use crate::runtime::ops::OpKind;
use crate::runtime::state::HostState;

/// Adds `delay` to `linker`.
///
/// # Errors
/// If the import is already defined.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IMPORT_MODULE, IMPORT_DELAY, delay)?;
    Ok(())
}

/// The duration of a `delay` of `millis` milliseconds; negative counts as 0.
pub fn delay_duration(millis: i64) -> Duration {
    Duration::from_millis(millis.max(0) as u64)
}

fn delay(mut caller: Caller<'_, HostState>, millis: i64) -> wasmtime::Result<i64> {
    // `None`: beyond what the clock counts, so never (the guest's parked delay).
    let due = tokio::time::Instant::now().checked_add(delay_duration(millis));
    let state = caller.data_mut();
    let started = start_op(state, OpKind::Delay, 0, |_, sink, _| async move {
        match due {
            Some(due) => tokio::time::sleep_until(due).await,
            None => std::future::pending().await,
        }
        sink.send(&Completion::Elapsed {}, b"").await
    })?;
    if let (true, Some(due)) = (started.admitted, due) {
        state.ops.set_due(started.id, due);
    }
    Ok(op_to_wasm(started.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_delays_are_zero() {
        assert_eq!(delay_duration(-5), Duration::ZERO);
        assert_eq!(delay_duration(i64::MIN), Duration::ZERO);
        assert_eq!(delay_duration(1500), Duration::from_millis(1500));
    }
}
