//! How the `host-shim` process ends, from its modules' outcomes and the signal that stopped
//! it, so that a supervisor (a shell, systemd, the kubelet) sees what it would see of the
//! native program.
//!
//! A module run alone stands for one native process:
//! - it exited with status `s` (its `main` returned, or `std::process::exit(s)`): the host
//!   exits with `s` (its low 8 bits, as POSIX keeps of an exit status);
//! - the host was stopped by SIGINT or SIGTERM and the module never asked for the stop signal
//!   (`tokio::signal::ctrl_c` and friends), so it was ended at once: the native process would
//!   have had the signal's default action and been killed by it — the host kills itself with
//!   the same signal (a shell then shows 128 + the signal's number: 130 for SIGINT, 143 for
//!   SIGTERM);
//! - anything else (a trap, a refusal, a module ended at the stop timeout): status 1.
//!
//! With several modules (a fleet) the host exits 0 if every one exited with status 0, else 1
//! ([`exit_status`]).

use crate::runtime::module::{EndReason, ModuleOutcome};
use crate::runtime::supervisor::{ModuleReport, exit_status};

/// A signal that stops the host: SIGINT (Ctrl-C) or SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGINT, number 2.
    Interrupt,
    /// SIGTERM, number 15.
    Terminate,
}

impl StopSignal {
    /// The signal's number on Linux (and every Unix): 2 or 15.
    pub fn number(self) -> i32 {
        match self {
            StopSignal::Interrupt => 2,
            StopSignal::Terminate => 15,
        }
    }

    /// The signal's name, `SIGINT` or `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
        }
    }
}

/// How the host process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostExit {
    /// Exit with this status.
    Status(u8),
    /// Be killed by this signal (its default action), as the native process would have been.
    KilledBy(StopSignal),
}

/// How the host ends after running the modules of `reports`, stopped by `stopped_by` (the
/// first stop signal it received, if any). See the module docs for the rules.
pub fn host_exit(reports: &[ModuleReport], stopped_by: Option<StopSignal>) -> HostExit {
    let [lone] = reports else {
        return HostExit::Status(exit_status(reports));
    };
    match (&lone.outcome, stopped_by) {
        // POSIX keeps the low 8 bits of an exit status.
        (ModuleOutcome::Exited(status), _) => HostExit::Status(*status as u8),
        (ModuleOutcome::Ended(EndReason::NeverAskedForStop), Some(signal)) => {
            HostExit::KilledBy(signal)
        }
        _ => HostExit::Status(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::module::ModuleError;

    fn report(name: &str, outcome: ModuleOutcome) -> ModuleReport {
        ModuleReport {
            name: name.into(),
            outcome,
            restarts: 0,
        }
    }

    #[test]
    fn a_lone_module_gives_its_exit_status_or_the_signal_that_would_have_killed_it() {
        let lone = |outcome| vec![report("m", outcome)];
        let int = Some(StopSignal::Interrupt);
        assert_eq!(
            host_exit(&lone(ModuleOutcome::Exited(0)), None),
            HostExit::Status(0)
        );
        assert_eq!(
            host_exit(&lone(ModuleOutcome::Exited(0)), int),
            HostExit::Status(0)
        );
        assert_eq!(
            host_exit(&lone(ModuleOutcome::Exited(3)), None),
            HostExit::Status(3)
        );
        assert_eq!(
            host_exit(&lone(ModuleOutcome::Exited(256 + 7)), None),
            HostExit::Status(7)
        );
        let deaf = ModuleOutcome::Ended(EndReason::NeverAskedForStop);
        assert_eq!(
            host_exit(&lone(deaf.clone()), int),
            HostExit::KilledBy(StopSignal::Interrupt)
        );
        assert_eq!(
            host_exit(&lone(deaf), Some(StopSignal::Terminate)),
            HostExit::KilledBy(StopSignal::Terminate)
        );
        let late = ModuleOutcome::Ended(EndReason::StopTimeout);
        assert_eq!(host_exit(&lone(late), int), HostExit::Status(1));
        let failed = ModuleOutcome::Failed(ModuleError::Internal("x".into()));
        assert_eq!(host_exit(&lone(failed), None), HostExit::Status(1));
    }

    #[test]
    fn a_fleet_exits_0_only_if_every_module_exited_0() {
        let deaf = ModuleOutcome::Ended(EndReason::NeverAskedForStop);
        let int = Some(StopSignal::Interrupt);
        let clean = vec![
            report("a", ModuleOutcome::Exited(0)),
            report("b", ModuleOutcome::Exited(0)),
        ];
        assert_eq!(host_exit(&clean, int), HostExit::Status(0));
        let mixed = vec![report("a", ModuleOutcome::Exited(0)), report("b", deaf)];
        assert_eq!(host_exit(&mixed, int), HostExit::Status(1));
        let exited_3 = vec![
            report("a", ModuleOutcome::Exited(3)),
            report("b", ModuleOutcome::Exited(0)),
        ];
        assert_eq!(host_exit(&exited_3, None), HostExit::Status(1));
        assert_eq!(host_exit(&[], None), HostExit::Status(0));
    }
}
