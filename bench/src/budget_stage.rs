//! The budget stage of a benchmark run (issue #44), in the order that keeps the most when a
//! run is cut short: the memory levers under the budget first (they decide what the host
//! keeps), then the idle CPU, then the edge fleet's budgets, then the Go fleet's, then the mixed
//! fleet's, then the ring's, each fleet's at every N, smallest first. A launch that fails is recorded in the
//! report ([`Measured::incomplete`]) and the stage goes on; the caller's checkpoint writes the
//! report after every result, so a run stopped during the largest N still leaves every figure
//! it finished.

use std::time::Duration;

use crate::budget::{Budget, BudgetLever};
use crate::fleet::Variant;
use crate::mixed::{Builds, KindsFleet};
use crate::report::Measured;
use crate::workloads::{Bench, Params};

/// What the budget stage measures.
#[derive(Debug, Clone)]
pub struct BudgetPlan {
    /// Ring sizes of the budgets (empty: none).
    pub ns: Vec<usize>,
    /// Sizes of the edge fleet's budgets (empty: none).
    pub edge_ns: Vec<usize>,
    /// Sizes of the mixed fleet's budgets (empty: none).
    pub mixed_ns: Vec<usize>,
    /// Sizes of the Go fleet's budgets (empty: none).
    pub go_ns: Vec<usize>,
    /// The builds of every kind the edge, Go and mixed fleets run (`None`: none of their
    /// budgets).
    pub fleet_builds: Option<Builds>,
    /// Variants of the budgets and the idle CPU (native, wasm, wasm-suspend).
    pub variants: Vec<Variant>,
    /// A budget probe's launch parameters.
    pub params: Params,
    /// Idle ring controllers of the idle-CPU launches (0: none).
    pub idle_cpu_n: usize,
    /// How long the idle CPU is measured.
    pub idle_cpu_window: Duration,
    /// Levers judged under the budget, each off in turn (empty: none).
    pub levers: Vec<BudgetLever>,
    /// Ring size of the lever judgements (each in its variant, [`BudgetLever::variant`]).
    pub lever_n: usize,
}

impl Bench {
    /// Runs `plan` into `measured`, calling `checkpoint` after every result; `tag` gives each
    /// launch its unique namespace prefix.
    ///
    /// # Errors
    /// Only if `checkpoint` fails: a failed launch is recorded in `measured.incomplete`.
    pub async fn budget_stage(
        &self,
        plan: &BudgetPlan,
        measured: &mut Measured,
        mut tag: impl FnMut() -> String,
        checkpoint: impl Fn(&Measured) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let window = plan.idle_cpu_window;
        for variant in Variant::ALL {
            let levers: Vec<BudgetLever> = plan
                .levers
                .iter()
                .copied()
                .filter(|lever| lever.variant() == variant)
                .collect();
            if levers.is_empty() || !plan.variants.contains(&variant) {
                continue;
            }
            let (n, label) = (plan.lever_n, variant.label());
            let what = format!("budget ring N={n} {label}, every lever on");
            eprintln!("bench: {what}");
            match self.budget(variant, n, &plan.params, &tag()).await {
                Ok(budget) => measured.budgets.push(budget),
                Err(err) => measured.incomplete.push(format!("{what}: {err:#}")),
            }
            let what = format!("idle CPU ring N={n} {label}, every lever on");
            eprintln!("bench: {what}");
            match self.idle_cpu(variant, n, window, &tag()).await {
                Ok(cpu) => measured.idle_cpu.push(cpu),
                Err(err) => measured.incomplete.push(format!("{what}: {err:#}")),
            }
            checkpoint(measured)?;
            for lever in levers {
                let Some(off) = lever.off(&self.setup) else {
                    let why = format!("lever {} not judged: it was removed", lever.label());
                    eprintln!("bench: {why}");
                    measured.incomplete.push(why);
                    continue;
                };
                let what = format!("lever {} off, ring N={n} {label}", lever.label());
                eprintln!("bench: {what}");
                let judged = self
                    .judge_lever(lever, &off, variant, n, &plan.params, window, &tag())
                    .await;
                match judged {
                    Ok(judged) => measured.lever_judgements.push(judged),
                    Err(err) => measured.incomplete.push(format!("{what}: {err:#}")),
                }
                checkpoint(measured)?;
            }
        }
        if plan.idle_cpu_n > 0 {
            for &v in &plan.variants {
                let n = plan.idle_cpu_n;
                if measured.idle_cpu_at(v, n).is_some() {
                    continue;
                }
                let what = format!("idle CPU ring N={n} {}", v.label());
                eprintln!("bench: {what}");
                match self.idle_cpu(v, n, window, &tag()).await {
                    Ok(cpu) => {
                        eprintln!("bench:   {:.2} CPU s/h", cpu.settled_rate());
                        measured.idle_cpu.push(cpu);
                    }
                    Err(err) => measured.incomplete.push(format!("{what}: {err:#}")),
                }
                checkpoint(measured)?;
            }
        }
        if let Some(builds) = &plan.fleet_builds {
            let fleets = [
                (KindsFleet::Edge, &plan.edge_ns),
                (KindsFleet::Go, &plan.go_ns),
                (KindsFleet::Mixed, &plan.mixed_ns),
            ];
            for (fleet, ns) in fleets {
                let mut ns = ns.clone();
                ns.sort_unstable();
                for n in ns {
                    for &v in &plan.variants {
                        if measured.fleet_budget(fleet, v, n).is_some() {
                            continue;
                        }
                        let what = format!("budget {} fleet N={n} {}", fleet.name(), v.label());
                        eprintln!("bench: {what}");
                        let budget = self
                            .fleet_budget(fleet, v, n, builds, &plan.params, &tag())
                            .await;
                        match budget {
                            Ok(budget) => {
                                eprintln!("bench:   budget {}", budget_text(&budget));
                                measured.fleet_budgets_mut(fleet).push(budget);
                            }
                            Err(err) => measured.incomplete.push(format!("{what}: {err:#}")),
                        }
                        checkpoint(measured)?;
                    }
                }
            }
        }
        let mut ns = plan.ns.clone();
        ns.sort_unstable();
        for n in ns {
            for &v in &plan.variants {
                if measured.budget(v, n).is_some() {
                    continue;
                }
                let what = format!("budget ring N={n} {}", v.label());
                eprintln!("bench: {what}");
                match self.budget(v, n, &plan.params, &tag()).await {
                    Ok(budget) => {
                        eprintln!("bench:   budget {}", budget_text(&budget));
                        measured.budgets.push(budget);
                    }
                    Err(err) => measured.incomplete.push(format!("{what}: {err:#}")),
                }
                checkpoint(measured)?;
            }
        }
        Ok(())
    }
}

/// A budget as the stage prints it: `38 MiB`, or `none found`.
fn budget_text(budget: &Budget) -> String {
    budget
        .budget_bytes
        .map_or("none found".to_owned(), |b| format!("{} MiB", b >> 20))
}
