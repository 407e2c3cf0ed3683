//! Runs every module concurrently, one tokio task each (no thread per module: a module's
//! task sleeps until one of its ops completes), restarts the ones whose
//! [`RestartPolicy`](crate::runtime::restart::RestartPolicy) says so after a [`Backoff`] delay, and
//! stops them (SPEC.md, "Lifecycle", step 6): on a stop request, `stop_signal` ops complete
//! and modules get [`Supervisor::stop_timeout`] to exit; then every module still running is
//! ended. A module's end, whatever the cause, releases all its ops (requests, watches,
//! timers) before it is restarted; the other modules are not affected.
//!
//! [`Backoff`]: crate::backoff::Backoff

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::backoff::BackoffState;
use crate::metrics::ModuleState;
use crate::runtime::host::Host;
use crate::runtime::module::LoadedModule;
use crate::runtime::module::outcome::{ModuleError, ModuleOutcome};
use crate::runtime::stop::{Phase, StopHandle};

/// How one module's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleReport {
    /// The module's name.
    pub name: String,
    /// How its last run ended.
    pub outcome: ModuleOutcome,
    /// How many times it was restarted.
    pub restarts: u32,
}

/// The host's exit status for these reports: 0 if every module exited with status 0, else 1.
pub fn exit_status(reports: &[ModuleReport]) -> u8 {
    if reports.iter().all(|r| r.outcome.is_success()) {
        0
    } else {
        1
    }
}

/// Runs a set of modules on one host until all have ended.
pub struct Supervisor {
    host: Host,
    stop: StopHandle,
    stop_timeout: Duration,
}

impl Supervisor {
    /// A supervisor that gives modules `stop_timeout` to exit once a stop is requested.
    pub fn new(host: Host, stop_timeout: Duration) -> Self {
        Self::with_stop_handle(host, stop_timeout, StopHandle::new())
    }

    /// Like [`Supervisor::new`], following an existing `stop` handle (e.g. one a signal
    /// handler already holds).
    pub fn with_stop_handle(host: Host, stop_timeout: Duration, stop: StopHandle) -> Self {
        Self {
            host,
            stop,
            stop_timeout,
        }
    }

    /// The handle that stops the modules (give it to the signal handler).
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// How long modules get to exit after a stop request.
    pub fn stop_timeout(&self) -> Duration {
        self.stop_timeout
    }

    /// Runs `modules` concurrently until every one has ended, and reports how each ended, in
    /// the order given. A module's failure ends only that module.
    pub async fn run_all(&self, modules: Vec<LoadedModule>) -> Vec<ModuleReport> {
        let names: Vec<String> = modules.iter().map(|m| m.name().to_owned()).collect();
        let mut tasks = JoinSet::new();
        let mut index_of_task = HashMap::new();
        for (index, module) in modules.into_iter().enumerate() {
            let host = self.host.clone();
            let stop = self.stop.clone();
            let handle = tasks.spawn(supervise(host, module, stop));
            index_of_task.insert(handle.id(), index);
        }
        let mut outcomes: Vec<Option<(ModuleOutcome, u32)>> = vec![None; names.len()];
        let mut phase = self.stop.subscribe();
        let mut phase_open = true;
        let mut kill_at: Option<Instant> = None;
        loop {
            let current = *phase.borrow_and_update();
            if kill_at.is_none() && current == Phase::Stopping {
                tracing::info!("stopping: modules have {:?} to exit", self.stop_timeout);
                kill_at = Some(Instant::now() + self.stop_timeout);
            }
            let kill_pending = kill_at.is_some() && current != Phase::Kill;
            tokio::select! {
                joined = tasks.join_next_with_id() => match joined {
                    None => break,
                    Some(Ok((id, outcome))) => {
                        if let Some(&index) = index_of_task.get(&id) {
                            outcomes[index] = Some(outcome);
                        }
                    }
                    Some(Err(err)) => {
                        if let Some(&index) = index_of_task.get(&err.id()) {
                            tracing::error!("the task of module `{}` failed: {err}", names[index]);
                            outcomes[index] = Some((ModuleOutcome::Failed(ModuleError::Internal(err.to_string())), 0));
                        }
                    }
                },
                changed = phase.changed(), if phase_open => phase_open = changed.is_ok(),
                () = tokio::time::sleep_until(kill_at.unwrap_or_else(Instant::now)), if kill_pending => {
                    tracing::warn!("stop timeout of {:?} reached: ending the remaining modules", self.stop_timeout);
                    self.stop.kill();
                }
            }
        }
        names
            .into_iter()
            .zip(outcomes)
            .map(|(name, outcome)| {
                let (outcome, restarts) = outcome.unwrap_or_else(|| {
                    let vanished = ModuleError::Internal("the module task vanished".into());
                    (ModuleOutcome::Failed(vanished), 0)
                });
                ModuleReport {
                    name,
                    outcome,
                    restarts,
                }
            })
            .collect()
    }
}

/// Runs `module` until it ends for good: restarts it, after the backoff delay, while its
/// restart policy asks for it and the host is running. Returns its last outcome and how many
/// times it was restarted.
async fn supervise(host: Host, module: LoadedModule, stop: StopHandle) -> (ModuleOutcome, u32) {
    supervise_reporting(host, module, stop, None).await
}

/// Where a supervised module is, as [`supervise_reporting`] reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunState {
    /// Running, waiting to be restarted, or ended for good.
    pub phase: RunPhase,
    /// Restarts so far.
    pub restarts: u32,
    /// How its last run ended, if it ended other than cleanly (the outcome's message).
    pub last_error: Option<String>,
}

/// The phase of a [`RunState`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunPhase {
    /// Its module runs (resident or suspended).
    #[default]
    Running,
    /// Its last run failed; it restarts after its back-off.
    BackOff,
    /// It ended and is not restarted (its policy, or the stop handle).
    Ended,
}

/// Runs one module as [`Supervisor::run_all`] runs each — restarted as its policy says, with
/// back-off, until it ends for good or `stop` stops it — publishing where it is to `report`
/// (if any) at each change. Returns its last outcome and its restarts.
pub async fn supervise_reporting(
    host: Host,
    module: LoadedModule,
    stop: StopHandle,
    report: Option<&watch::Sender<RunState>>,
) -> (ModuleOutcome, u32) {
    let publish = |phase, restarts, outcome: Option<&ModuleOutcome>| {
        let Some(report) = report else {
            return;
        };
        report.send_modify(|state| {
            state.phase = phase;
            state.restarts = restarts;
            if let Some(outcome) = outcome.filter(|o| !o.is_success()) {
                state.last_error = Some(outcome.to_string());
            }
        });
    };
    let policy = module.options().restart;
    let mut backoff = BackoffState::new(host.settings().backoff);
    let mut phase = stop.subscribe();
    let mut restarts = 0;
    let metrics = host.metrics();
    let name = module.name().to_owned();
    metrics.count_restarts(&name, 0);
    loop {
        let started = Instant::now();
        metrics.set_state(&name, ModuleState::Running);
        publish(RunPhase::Running, restarts, None);
        let outcome = host.run_module(module.clone(), &stop).await;
        if stop.phase() != Phase::Running || !policy.restarts_after(&outcome) {
            metrics.set_state(&name, ModuleState::Stopped);
            publish(RunPhase::Ended, restarts, Some(&outcome));
            return (outcome, restarts);
        }
        metrics.set_state(&name, ModuleState::Backoff);
        publish(RunPhase::BackOff, restarts, Some(&outcome));
        let delay = backoff.delay_after(started.elapsed());
        tracing::warn!(
            "restarting module `{}` in {delay:?} (restart {}, policy {policy})",
            module.name(),
            restarts + 1
        );
        tokio::select! {
            () = tokio::time::sleep(delay) => {
                restarts += 1;
                metrics.count_restarts(&name, 1);
            }
            _ = phase.wait_for(|p| *p != Phase::Running) => {
                metrics.set_state(&name, ModuleState::Stopped);
                publish(RunPhase::Ended, restarts, None);
                return (outcome, restarts);
            }
        }
    }
}
