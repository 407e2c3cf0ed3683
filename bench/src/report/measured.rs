//! What the driver measured: the report's input, kept whole in `report.json`.

use serde::{Deserialize, Serialize};

use crate::budget::{Budget, IdleCpu, LeverJudgement};
use crate::cold_start::ColdStartRun;
use crate::fleet::Variant;
use crate::levers::LeverRun;
use crate::mixed::{KindsFleet, MixedRun};
use crate::replicas::ReplicasRun;
use crate::statics::Statics;
use crate::workloads::{ChurnRun, ResumePoint, RingRun};

/// A variant that was asked for but could not run, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Unavailable {
    /// The variant.
    pub variant: Variant,
    /// Why.
    pub reason: String,
}

/// Everything measured, and the parameters.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Measured {
    /// When the run started (RFC 3339-ish, from `date`), and the machine.
    pub context: Vec<(String, String)>,
    /// Variants run.
    pub variants: Vec<Variant>,
    /// Variants asked for that could not run.
    pub unavailable: Vec<Unavailable>,
    /// Controller counts of the ring.
    pub ns: Vec<usize>,
    /// Ring launches.
    pub ring: Vec<RingRun>,
    /// Churn launches.
    pub churn: Vec<ChurnRun>,
    /// The resume curve, by linear-memory size (empty when it did not run).
    pub resume: Vec<ResumePoint>,
    /// Figures without a cluster.
    pub statics: Option<Statics>,
    /// The levers' launches: every lever on, then each off in turn (empty when they did not
    /// run).
    pub levers: Vec<LeverRun>,
    /// The cold starts of distinct modules, compiled in the host then in a child (empty
    /// when it did not run).
    pub cold_start: Vec<ColdStartRun>,
    /// The launches of the mixed and edge fleets (empty when they did not run).
    pub mixed: Vec<MixedRun>,
    /// The replicas workload, if it ran.
    pub replicas: Option<ReplicasRun>,
    /// Why it did not, if it did not.
    pub replicas_skipped: Option<String>,
    /// The budget workload's budgets of the ring (empty when it did not run).
    #[serde(default)]
    pub budgets: Vec<Budget>,
    /// The edge fleet's budgets (empty when they were not measured; see
    /// [`crate::fleet_budget`]).
    #[serde(default)]
    pub edge_budgets: Vec<Budget>,
    /// The mixed fleet's budgets (empty when they were not measured; see
    /// [`crate::fleet_budget`]).
    #[serde(default)]
    pub mixed_budgets: Vec<Budget>,
    /// The Go fleet's budgets (go-configmap-mirror; empty when they were not measured).
    #[serde(default)]
    pub go_budgets: Vec<Budget>,
    /// The idle-CPU workload's launches (empty when it did not run).
    #[serde(default)]
    pub idle_cpu: Vec<IdleCpu>,
    /// The memory levers judged again under the budget, each off (empty when it did not run).
    #[serde(default)]
    pub lever_judgements: Vec<LeverJudgement>,
    /// Launches of the budget stage that failed, each with why (the stage went on without
    /// them).
    #[serde(default)]
    pub incomplete: Vec<String>,
    /// Launches of N suspended modules of the mixed kinds (empty when they did not run).
    #[serde(default)]
    pub suspended_scale: Vec<crate::suspended_scale::SuspendedScale>,
    /// The chaos soak's figures (`scripts/soak.sh`'s `report.json`), if one was handed in.
    #[serde(default)]
    pub soak: Option<crate::soak::report::Summary>,
}

impl Measured {
    /// Why `v` could not run, if it was asked for and could not.
    pub fn unavailable(&self, v: Variant) -> Option<&str> {
        self.unavailable
            .iter()
            .find(|u| u.variant == v)
            .map(|u| u.reason.as_str())
    }

    /// The budgets of `fleet`: [`Measured::edge_budgets`], [`Measured::mixed_budgets`] or
    /// [`Measured::go_budgets`].
    pub fn fleet_budgets(&self, fleet: KindsFleet) -> &[Budget] {
        match fleet {
            KindsFleet::Edge => &self.edge_budgets,
            KindsFleet::Mixed => &self.mixed_budgets,
            KindsFleet::Go => &self.go_budgets,
        }
    }

    /// The budgets of `fleet`, to add one.
    pub fn fleet_budgets_mut(&mut self, fleet: KindsFleet) -> &mut Vec<Budget> {
        match fleet {
            KindsFleet::Edge => &mut self.edge_budgets,
            KindsFleet::Mixed => &mut self.mixed_budgets,
            KindsFleet::Go => &mut self.go_budgets,
        }
    }

    /// The budget of `fleet` with `n` controllers as `variant`, if it was measured.
    pub fn fleet_budget(&self, fleet: KindsFleet, variant: Variant, n: usize) -> Option<&Budget> {
        Budget::find(self.fleet_budgets(fleet), variant, n)
    }

    /// The budget of the ring of `n` controllers as `variant`, if it was measured.
    pub fn budget(&self, variant: Variant, n: usize) -> Option<&Budget> {
        Budget::find(&self.budgets, variant, n)
    }

    /// The idle CPU of `n` ring controllers as `variant`, if it was measured.
    pub fn idle_cpu_at(&self, variant: Variant, n: usize) -> Option<&IdleCpu> {
        self.idle_cpu
            .iter()
            .find(|c| c.variant == variant && c.n == n)
    }
}
