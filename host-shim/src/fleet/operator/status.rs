//! A WasmController's status: built from where its module is (the supervisor's run state, the
//! host's metrics for suspend and memory) and written with a merge patch of the status
//! subresource when it changes. The claim (`host`, `hostSince`) is not part of it: only
//! [`claim`](crate::fleet::placement::claim) writes that, by compare-and-swap, and these
//! patches leave it as it is.

use kube::Api;
use kube::api::{Patch, PatchParams};

use crate::fleet::wasm_controller::{Condition, Phase, WasmController, WasmControllerStatus};
use crate::metrics::{Metrics, ModuleState};
use crate::runtime::supervisor::{RunPhase, RunState};

/// The phase a module's run state and its host state give.
pub(crate) fn phase_of(run: &RunState, state: Option<ModuleState>) -> Phase {
    match run.phase {
        RunPhase::Running if state == Some(ModuleState::Suspended) => Phase::Suspended,
        RunPhase::Running => Phase::Running,
        RunPhase::BackOff => Phase::BackOff,
        RunPhase::Ended if run.last_error.is_some() => Phase::Failed,
        RunPhase::Ended => Phase::Stopped,
    }
}

/// The status of a running module named `module` in the host.
pub(crate) fn of_running(
    run: &RunState,
    metrics: &Metrics,
    module: &str,
    digest: &str,
    generation: Option<i64>,
    previous: Option<&WasmControllerStatus>,
) -> WasmControllerStatus {
    let phase = phase_of(run, metrics.module_state(module));
    let ready = matches!(phase, Phase::Running | Phase::Suspended);
    let (reason, message) = match (&run.last_error, phase) {
        (Some(error), Phase::BackOff | Phase::Failed | Phase::Stopped) => {
            (format!("{phase:?}"), error.clone())
        }
        _ => (format!("{phase:?}"), String::new()),
    };
    let mut status = WasmControllerStatus {
        phase,
        digest: Some(digest.to_owned()),
        restarts: run.restarts,
        message: (!message.is_empty()).then(|| message.clone()),
        memory_bytes: metrics.module_memory(module),
        host: None,
        host_since: None,
        observed_generation: generation,
        conditions: Vec::new(),
    };
    status.conditions = vec![
        condition("Pulled", true, "Pulled", "", generation, previous),
        condition("Ready", ready, &reason, &message, generation, previous),
    ];
    status
}

/// The status of a module that is not running: `phase` because of `message`.
pub(crate) fn not_running(
    phase: Phase,
    message: &str,
    pulled: bool,
    digest: Option<&str>,
    generation: Option<i64>,
    previous: Option<&WasmControllerStatus>,
) -> WasmControllerStatus {
    WasmControllerStatus {
        phase,
        digest: digest.map(str::to_owned),
        restarts: 0,
        message: (!message.is_empty()).then(|| message.to_owned()),
        memory_bytes: None,
        host: None,
        host_since: None,
        observed_generation: generation,
        conditions: vec![
            condition(
                "Pulled",
                pulled,
                if pulled { "Pulled" } else { "NotPulled" },
                if pulled { "" } else { message },
                generation,
                previous,
            ),
            condition(
                "Ready",
                false,
                &format!("{phase:?}"),
                message,
                generation,
                previous,
            ),
        ],
    }
}

/// A condition, keeping the previous transition time if its status did not change.
fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    previous: Option<&WasmControllerStatus>,
) -> Condition {
    let status = if status { "True" } else { "False" };
    let since = previous
        .and_then(|p| p.conditions.iter().find(|c| c.type_ == type_))
        .filter(|c| c.status == status)
        .map(|c| c.last_transition_time.clone());
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: (!message.is_empty()).then(|| message.to_owned()),
        last_transition_time: since.unwrap_or_else(now_rfc3339),
        observed_generation: generation,
    }
}

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Writes one resource's status, remembering what it wrote last so that an unchanged status
/// (memory aside) is not written again.
pub(crate) struct StatusWriter {
    api: Api<WasmController>,
    name: String,
    last: Option<WasmControllerStatus>,
}

impl StatusWriter {
    /// The writer of `name`'s status through `api`, whose status is `last` now.
    pub(crate) fn new(
        api: Api<WasmController>,
        name: &str,
        last: Option<WasmControllerStatus>,
    ) -> Self {
        Self {
            api,
            name: name.to_owned(),
            last,
        }
    }

    /// The status last written (or read).
    pub(crate) fn last(&self) -> Option<&WasmControllerStatus> {
        self.last.as_ref()
    }

    /// Writes `status` (a merge patch of the status subresource) unless it equals the last one
    /// but for memory.
    ///
    /// # Errors
    /// The API server's refusal.
    pub(crate) async fn write(&mut self, status: WasmControllerStatus) -> kube::Result<()> {
        if self
            .last
            .as_ref()
            .is_some_and(|p| same_but_memory(p, &status))
        {
            return Ok(());
        }
        let patch = serde_json::json!({ "status": status });
        self.api
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        self.last = Some(status);
        Ok(())
    }
}

/// Whether two statuses differ in nothing a write would change (memory and the claim aside).
fn same_but_memory(a: &WasmControllerStatus, b: &WasmControllerStatus) -> bool {
    let mut a = a.clone();
    a.memory_bytes = b.memory_bytes;
    a.host.clone_from(&b.host);
    a.host_since.clone_from(&b.host_since);
    &a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_states_map_to_phases() {
        let run = |phase, error: Option<&str>| RunState {
            phase,
            restarts: 0,
            last_error: error.map(str::to_owned),
        };
        assert_eq!(
            phase_of(&run(RunPhase::Running, None), None),
            Phase::Running
        );
        assert_eq!(
            phase_of(&run(RunPhase::Running, None), Some(ModuleState::Suspended)),
            Phase::Suspended
        );
        assert_eq!(
            phase_of(&run(RunPhase::BackOff, Some("trapped")), None),
            Phase::BackOff
        );
        assert_eq!(
            phase_of(&run(RunPhase::Ended, Some("refused")), None),
            Phase::Failed
        );
        assert_eq!(phase_of(&run(RunPhase::Ended, None), None), Phase::Stopped);
    }

    #[test]
    fn transition_times_stay_while_a_condition_holds() {
        let first = not_running(Phase::Pending, "", false, None, Some(1), None);
        let mut earlier = first.clone();
        earlier.conditions[1].last_transition_time = "2020-01-01T00:00:00Z".into();
        let again = not_running(Phase::Pulling, "", false, None, Some(1), Some(&earlier));
        assert_eq!(
            again.conditions[1].last_transition_time,
            "2020-01-01T00:00:00Z"
        );
        let metrics = Metrics::new();
        let running = of_running(
            &RunState::default(),
            &metrics,
            "m",
            "sha256:x",
            Some(1),
            Some(&earlier),
        );
        assert_ne!(
            running.conditions[1].last_transition_time, "2020-01-01T00:00:00Z",
            "Ready became True"
        );
        assert_eq!(running.conditions[1].status, "True");
    }
}
