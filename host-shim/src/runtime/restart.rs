//! Which ended modules are started again: a pod's `restartPolicy` (`Always`, `OnFailure`,
//! `Never`), applied to one module, with the outcomes that no restart can fix left out.

use std::fmt;
use std::str::FromStr;

use crate::runtime::module::outcome::{ModuleError, ModuleOutcome};

/// When a module that ended by itself is started again (after a
/// [`Backoff`](crate::backoff::Backoff) delay). Modules are never restarted once the host is
/// stopping, nor when the wasm itself cannot run (it does not compile, is refused for its ABI
/// version or imports, or cannot be instantiated, e.g. its initial memory is over its limit):
/// running it again would fail the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartPolicy {
    /// Restart after any end, a clean `exit(0)` included.
    Always,
    /// Restart after a failure: a trap (a Rust panic), an entry deadline overrun (an endless
    /// loop), going over the memory limit, a malformed ABI call, or an exit with a non-zero
    /// status. A module that exits with status 0 has finished and stays stopped. The default
    /// in a manifest.
    OnFailure,
    /// Never restart (the default of `host-shim run MODULE.wasm…`).
    Never,
}

impl RestartPolicy {
    /// Whether a module that ended with `outcome` (while the host is running) is restarted.
    pub fn restarts_after(self, outcome: &ModuleOutcome) -> bool {
        if !is_restartable(outcome) {
            return false;
        }
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => !outcome.is_success(),
            RestartPolicy::Never => false,
        }
    }
}

/// Whether another run could end differently.
fn is_restartable(outcome: &ModuleOutcome) -> bool {
    match outcome {
        ModuleOutcome::Exited(_) => true,
        ModuleOutcome::Ended(_) => false,
        ModuleOutcome::Failed(err) => !matches!(
            err,
            ModuleError::Compile(_) | ModuleError::Incompatible(_) | ModuleError::Instantiate(_)
        ),
    }
}

impl fmt::Display for RestartPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RestartPolicy::Always => "Always",
            RestartPolicy::OnFailure => "OnFailure",
            RestartPolicy::Never => "Never",
        })
    }
}

/// A restart policy that is not `Always`, `OnFailure` or `Never`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a restart policy (Always, OnFailure or Never)")]
pub struct UnknownRestartPolicy(pub String);

impl FromStr for RestartPolicy {
    type Err = UnknownRestartPolicy;

    /// Parses the pod spec's spelling: `Always`, `OnFailure`, `Never`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "Always" => Ok(RestartPolicy::Always),
            "OnFailure" => Ok(RestartPolicy::OnFailure),
            "Never" => Ok(RestartPolicy::Never),
            other => Err(UnknownRestartPolicy(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::abi::BadAbiCall;
    use crate::runtime::module::outcome::EndReason;
    use kube_wasm_abi::names::{EXPORT_START, IMPORT_WATCH};
    use std::time::Duration;

    #[test]
    fn on_failure_restarts_failures_but_not_clean_exits() {
        let policy = RestartPolicy::OnFailure;
        assert!(!policy.restarts_after(&ModuleOutcome::Exited(0)));
        assert!(policy.restarts_after(&ModuleOutcome::Exited(2)));
        for err in [
            ModuleError::BadAbiCall(BadAbiCall::new(IMPORT_WATCH, "garbage")),
            ModuleError::DeadlineExceeded {
                during: EXPORT_START,
                deadline: Duration::from_secs(1),
            },
            ModuleError::AllocFailed { len: 3 },
        ] {
            assert!(policy.restarts_after(&ModuleOutcome::Failed(err)));
        }
    }

    #[test]
    fn unfixable_outcomes_and_host_stops_are_never_restarted() {
        for policy in [RestartPolicy::Always, RestartPolicy::OnFailure] {
            assert!(
                !policy.restarts_after(&ModuleOutcome::Failed(ModuleError::Compile("bad".into())))
            );
            assert!(
                !policy.restarts_after(&ModuleOutcome::Failed(ModuleError::Instantiate(
                    "bad".into()
                )))
            );
            assert!(!policy.restarts_after(&ModuleOutcome::Ended(EndReason::StopTimeout)));
        }
        assert!(RestartPolicy::Always.restarts_after(&ModuleOutcome::Exited(0)));
        assert!(!RestartPolicy::Never.restarts_after(&ModuleOutcome::Exited(1)));
    }

    #[test]
    fn parses_the_pod_spellings() {
        assert_eq!("OnFailure".parse(), Ok(RestartPolicy::OnFailure));
        assert_eq!("Always".parse(), Ok(RestartPolicy::Always));
        assert_eq!("Never".parse(), Ok(RestartPolicy::Never));
        let err = "onfailure"
            .parse::<RestartPolicy>()
            .expect_err("case matters");
        assert!(
            err.to_string().contains("Always, OnFailure or Never"),
            "{err}"
        );
    }
}
