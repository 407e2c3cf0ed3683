//! How a module's run ends: its outcome, and why it failed or was ended.

use std::fmt;
use std::time::Duration;

use crate::runtime::abi::BadAbiCall;
use crate::runtime::abi::exports::Incompatible;
use crate::runtime::memory_cap::MemoryLimitExceeded;
use crate::runtime::quota::QuotaAbuse;

/// Why a module was ended or could not run. Each ends only that module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModuleError {
    /// The module's wasm could not be fetched (pulled from its registry).
    #[error("could not be fetched: {0}")]
    Fetch(String),
    /// The wasm could not be read or compiled.
    #[error("could not be compiled: {0}")]
    Compile(String),
    /// The module was refused: wrong ABI version, unknown imports, missing exports.
    #[error("was refused: {0}")]
    Incompatible(#[from] Incompatible),
    /// Instantiation failed (e.g. an import neither WASI nor the ABI provides).
    #[error("could not be instantiated: {0}")]
    Instantiate(String),
    /// The guest made a malformed call to an import.
    #[error("made a {0}")]
    BadAbiCall(BadAbiCall),
    /// The guest trapped (a Rust panic aborts with `unreachable`).
    #[error("trapped in `{during}`: {reason}")]
    Trap {
        /// The export the host had called.
        during: &'static str,
        /// The trap, in one line.
        reason: String,
        /// The full error with the guest's wasm backtrace (for the log).
        backtrace: String,
    },
    /// One guest entry ran past the deadline.
    #[error("ran for more than {deadline:?} in one call of `{during}` (an endless loop?)")]
    DeadlineExceeded {
        /// The export the host had called.
        during: &'static str,
        /// The deadline.
        deadline: Duration,
    },
    /// The module ignored its quota refusals, or was refused what it cannot be told about.
    #[error("was ended for its quotas: {0}")]
    QuotaAbuse(QuotaAbuse),
    /// A linear memory tried to grow past the module's memory limit.
    #[error("{0}")]
    MemoryLimit(MemoryLimitExceeded),
    /// `kube_wasm_alloc` returned 0.
    #[error("is out of memory: `kube_wasm_alloc({len})` returned 0")]
    AllocFailed {
        /// The requested size in bytes.
        len: usize,
    },
    /// `kube_wasm_alloc` returned a buffer that is not inside linear memory.
    #[error("returned a bad buffer from `kube_wasm_alloc({len})`: {reason}")]
    AllocOutOfBounds {
        /// The requested size in bytes.
        len: usize,
        /// What is wrong with the buffer.
        reason: String,
    },
    /// The host itself failed while running the module (a bug).
    #[error("was ended by an internal host error: {0}")]
    Internal(String),
    /// The module was suspended to disk and could not be restored (its snapshot could not
    /// be read back, or the instance could not be re-created).
    #[error("could not be resumed from its snapshot: {0}")]
    Resume(String),
    /// A reactor module (ABI 1.4) stalled with no live op and no timer: nothing can ever wake
    /// it (a Go program whose goroutines are all asleep).
    #[error(
        "is deadlocked: it stalled with no pending operation and no timer, so nothing can wake \
         it (all goroutines are asleep)"
    )]
    Deadlocked,
    /// A completion too large for a wasm32 guest (over `i32::MAX` bytes).
    #[error("cannot receive a completion of {len} bytes: more than a wasm32 guest can address")]
    CompletionTooLarge {
        /// The frame size in bytes.
        len: usize,
    },
}

/// Why the host ended a module that had not failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The host is stopping and the module never asked for the stop signal.
    NeverAskedForStop,
    /// The host is stopping and the module did not exit in time (the stop timeout ran out,
    /// or a second stop request came).
    StopTimeout,
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EndReason::NeverAskedForStop => {
                "the host is stopping and the module never asked for the stop signal"
            }
            EndReason::StopTimeout => "the module did not exit in time after the stop request",
        })
    }
}

/// How a module's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleOutcome {
    /// The guest called `proc_exit(status)`; 0 is a clean stop.
    Exited(i32),
    /// The module failed or was refused.
    Failed(ModuleError),
    /// The host ended it while stopping.
    Ended(EndReason),
}

impl ModuleOutcome {
    /// Whether the module stopped cleanly: it exited with status 0.
    pub fn is_success(&self) -> bool {
        matches!(self, ModuleOutcome::Exited(0))
    }
}

impl fmt::Display for ModuleOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModuleOutcome::Exited(0) => f.write_str("exited cleanly"),
            ModuleOutcome::Exited(status) => write!(f, "exited with status {status}"),
            ModuleOutcome::Failed(err) => err.fmt(f),
            ModuleOutcome::Ended(reason) => write!(f, "was ended: {reason}"),
        }
    }
}
