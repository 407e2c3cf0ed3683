//! How the ring's cost grows with N (issue #44), from the budget workload's launches without
//! a limit: start-up to all reconciling, event→reconcile p99, and per controller the budget and
//! the anonymous memory charged at idle; with their goals (p99 ≤ native's at every N, start-up
//! ≤ native's).

use std::fmt::Write as _;

use super::goals::Goal;
use super::measured::Measured;
use crate::budget::Budget;
use crate::fleet::Variant;

/// The variants of the host compared with native.
const HOSTED: [Variant; 2] = [Variant::Wasm, Variant::WasmSuspend];

/// Every N with a native budget and one of `variant`, ascending.
fn paired_ns(m: &Measured, variant: Variant) -> Vec<usize> {
    let mut ns: Vec<usize> = m
        .budgets
        .iter()
        .filter(|b| b.variant == variant && m.budget(Variant::Native, b.n).is_some())
        .map(|b| b.n)
        .collect();
    ns.sort_unstable();
    ns.dedup();
    ns
}

/// Event→reconcile p99 of `variant` against native's at every N both were measured.
fn p99_goal(m: &Measured, variant: Variant) -> Goal {
    let goal = format!(
        "event→reconcile p99 of the ring, {}, at every N (budget launches without a limit)",
        variant.label()
    );
    let target = "≤ native's at every N".to_owned();
    let ns = paired_ns(m, variant);
    if ns.is_empty() {
        return Goal {
            goal,
            target,
            measured: "not measured: the budget workload did not run (--budget-n)".into(),
            holds: None,
        };
    }
    let mut holds = true;
    let figures: Vec<String> = ns
        .iter()
        .filter_map(|&n| {
            let (native, hosted) = (m.budget(Variant::Native, n)?, m.budget(variant, n)?);
            holds &= hosted.unconstrained_p99_ms <= native.unconstrained_p99_ms;
            Some(format!(
                "N = {n}: {:.1} vs {:.1} ms",
                hosted.unconstrained_p99_ms, native.unconstrained_p99_ms
            ))
        })
        .collect();
    Goal {
        goal,
        target,
        measured: figures.join("; "),
        holds: Some(holds),
    }
}

/// Start-up to all reconciling of `variant` against native's at the largest N both ran.
fn startup_goal(m: &Measured, variant: Variant) -> Goal {
    let goal = format!(
        "start-up to all ring controllers reconciling, {}",
        variant.label()
    );
    let target = "≤ native's".to_owned();
    let pair = paired_ns(m, variant)
        .last()
        .and_then(|&n| Some((n, m.budget(Variant::Native, n)?, m.budget(variant, n)?)));
    match pair {
        Some((n, native, hosted)) => Goal {
            goal: format!("{goal} (N = {n})"),
            target,
            measured: format!(
                "{:.1} vs {:.1} s",
                hosted.unconstrained.startup_ms / 1000.0,
                native.unconstrained.startup_ms / 1000.0
            ),
            holds: Some(hosted.unconstrained.startup_ms <= native.unconstrained.startup_ms),
        },
        None => Goal {
            goal,
            target,
            measured: "not measured: the budget workload did not run (--budget-n)".into(),
            holds: None,
        },
    }
}

/// The goals of issue #44 on growth with N.
pub fn goals(m: &Measured) -> Vec<Goal> {
    HOSTED
        .into_iter()
        .flat_map(|v| [p99_goal(m, v), startup_goal(m, v)])
        .collect()
}

/// The section of `report.md`: one row per variant and N (empty without budgets).
pub fn section(m: &Measured) -> String {
    let mut s = String::new();
    if m.budgets.is_empty() {
        return s;
    }
    s.push_str(
        "\n### Growth with N\n\nFrom each budget's launch without a limit: start-up (processes \
         started to the first ring cycle through every controller), event→reconcile p99, and \
         per controller the budget and the anonymous memory charged at idle.\n\n\
         | variant | N | start-up s | p99 ms | budget KiB per controller | idle anon KiB per \
         controller |\n|---|---|---|---|---|---|\n",
    );
    let mut rows: Vec<&Budget> = m.budgets.iter().collect();
    rows.sort_by_key(|b| (b.variant, b.n));
    rows.dedup_by_key(|b| (b.variant, b.n));
    for b in rows {
        let per = |bytes: u64| format!("{:.0}", bytes as f64 / 1024.0 / b.n.max(1) as f64);
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} | {:.1} | {} | {} |",
            b.variant.label(),
            b.n,
            b.unconstrained.startup_ms / 1000.0,
            b.unconstrained_p99_ms,
            b.budget_bytes.map_or("-".into(), per),
            b.unconstrained
                .cgroup
                .as_ref()
                .map_or("-".into(), |c| per(c.idle.anon)),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::RingRun;

    fn budget(variant: Variant, n: usize, startup_ms: f64, p99_ms: f64) -> Budget {
        Budget {
            fleet: "ring".into(),
            variant,
            n,
            unconstrained: RingRun {
                startup_ms,
                ..RingRun::empty(variant, n)
            },
            unconstrained_p99_ms: p99_ms,
            probes: Vec::new(),
            budget_bytes: Some(n as u64 * 1024 * 1024),
        }
    }

    #[test]
    fn p99_holds_only_at_every_n_and_startup_is_judged_at_the_largest() {
        let m = Measured {
            budgets: vec![
                budget(Variant::Native, 10, 2_000.0, 5.0),
                budget(Variant::Wasm, 10, 1_000.0, 4.0),
                budget(Variant::Native, 1000, 60_000.0, 8.0),
                budget(Variant::Wasm, 1000, 90_000.0, 9.0),
                budget(Variant::WasmSuspend, 10, 1_500.0, 4.5),
            ],
            ..Measured::default()
        };
        let g = goals(&m);
        assert_eq!(g.len(), 4);
        assert_eq!(g[0].holds, Some(false), "9.0 > 8.0 at N = 1000: {:?}", g[0]);
        assert!(g[0].measured.contains("N = 10: 4.0 vs 5.0 ms"));
        assert_eq!(g[1].holds, Some(false), "90 s > 60 s at N = 1000");
        assert!(g[1].goal.ends_with("(N = 1000)"));
        assert_eq!(g[2].holds, Some(true), "suspended, only N = 10 paired");
        assert_eq!(g[3].holds, Some(true));
        assert_eq!(goals(&Measured::default())[0].holds, None);
        let s = section(&m);
        assert!(s.contains("| wasm | 1000 | 90.0 | 9.0 | 1024 | - |"), "{s}");
    }
}
