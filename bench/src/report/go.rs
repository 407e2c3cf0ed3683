//! The Go workload's section (`--go`): issue #43's goals and the figures behind them.

use std::fmt::Write as _;

use super::budget::{fleet_section, go_budget_goals};
use super::goals::{Goal, go_goals};
use crate::go::{GoFigures, Latency};
use crate::memory::Sample;
use crate::stats;

fn ms(values: &[f64]) -> String {
    match stats::median(values) {
        Some(m) => format!("{m:.0} ms"),
        None => "—".into(),
    }
}

fn latency(l: &Latency) -> String {
    match (l.p50, l.p99) {
        (Some(p50), Some(p99)) => {
            format!("p50 {p50:.1} ms, p99 {p99:.1} ms ({} events)", l.ms.len())
        }
        _ => "—".into(),
    }
}

/// The goals and figures as Markdown; the goals are returned too.
pub fn markdown(g: &GoFigures) -> (String, Vec<Goal>) {
    let mut goals = go_goals(g);
    if !g.budgets.is_empty() {
        // The memory goals read as budgets go after the PSS ones, before the latency goal.
        let latency = goals.len().saturating_sub(1);
        goals.splice(latency..latency, go_budget_goals(&g.budgets));
    }
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    let sample = |s: &Sample| {
        format!(
            "{:.1} MiB (anonymous {:.1} MiB)",
            s.pss_kib as f64 / 1024.0,
            s.pss_anon_kib as f64 / 1024.0
        )
    };
    let mut md = String::new();
    if !g.reclaim.none() {
        let _ = writeln!(
            md,
            "> **Measured under memory pressure**: global reclaim during the run: {}.\n",
            g.reclaim
        );
    }
    md.push_str("## Goals\n\n| goal | target | measured | |\n| --- | --- | --- | --- |\n");
    for goal in &goals {
        let verdict = match goal.holds {
            Some(true) => "holds",
            Some(false) => "**fails**",
            None => "not measured",
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {verdict} |",
            goal.goal, goal.target, goal.measured
        );
    }
    let _ = write!(
        md,
        "\n## Figures\n\n| figure | value |\n| --- | --- |\n\
         | `go-configmap-mirror.wasm` | {:.1} MiB |\n\
         | cold compile (the host's engine) | {} |\n\
         | load from the precompiled cache | {} |\n\
         | native Go process, idle (PSS) | {} |\n\
         | host with the Go module, idle | {} |\n\
         | host with the Go module, suspended | {} (linear memory {:.1} MiB, snapshot {:.1} MiB) |\n\
         | resume from disk | {} over {} resumes |\n\
         | event→reconcile (the apiserver's answer to the update to its receipt of the apply), native | {} |\n\
         | event→reconcile, module resident | {} |\n\
         | event→reconcile, module suspended | {} |\n\
         | event→mirror (the update to the driver's watch seeing the mirror hold it), native | {} |\n\
         | event→mirror, module resident | {} |\n\
         | event→mirror, module suspended | {} |\n",
        g.wasm_bytes as f64 / 1_048_576.0,
        ms(&g.compile_ms),
        ms(&g.cache_load_ms),
        sample(&g.native_idle),
        sample(&g.wasm_idle),
        sample(&g.wasm_suspended),
        g.linear_memory_bytes as f64 / 1_048_576.0,
        g.snapshot_bytes as f64 / 1_048_576.0,
        g.resume_mean_ms
            .map_or("—".into(), |m| format!("mean {m:.1} ms")),
        g.resumes,
        latency(&g.reconcile_native),
        latency(&g.reconcile_wasm),
        latency(&g.reconcile_suspended),
        latency(&g.latency_native),
        latency(&g.latency_wasm),
        latency(&g.latency_suspended),
    );
    if let (Some(native), Some(wasm), Some(suspended)) =
        (g.fleet_native, g.fleet_wasm, g.fleet_suspended)
    {
        let n = g.fleet_n;
        let per = |s: &Sample| s.pss_kib as f64 / 1024.0 / n.max(1) as f64;
        let _ = write!(
            md,
            "| {n} Go controllers, native processes | {} — {:.2} MiB each |\n\
             | the same in one host, resident | {} — {:.2} MiB each |\n\
             | the same in one host, suspended | {} — {:.2} MiB each |\n",
            sample(&native),
            per(&native),
            sample(&wasm),
            per(&wasm),
            sample(&suspended),
            per(&suspended),
        );
    }
    if let (Some(native), Some(wasm), Some(suspended)) =
        (g.mixed_native, g.mixed_wasm, g.mixed_suspended)
    {
        let _ = write!(
            md,
            "| mixed fleet ({}), native processes | {} |\n\
             | the same in one host, resident | {} ({:.1} %) |\n\
             | the same in one host, suspended | {} ({:.1} %) |\n",
            g.mixed_kinds.join(", "),
            mib(native.pss_kib),
            mib(wasm.pss_kib),
            wasm.pss_kib as f64 * 100.0 / native.pss_kib.max(1) as f64,
            mib(suspended.pss_kib),
            suspended.pss_kib as f64 * 100.0 / native.pss_kib.max(1) as f64,
        );
    }
    if !g.budgets.is_empty() || !g.budgets_incomplete.is_empty() {
        md.push_str(
            "\n## Memory budgets\n\nThe smallest cgroup memory limit (no swap) each variant still \
             runs in: nothing OOM-killed, every controller's answer to every cycle's change, \
             event→reconcile p99 within 2× the same variant's without a limit; bisected to 5 %.\n",
        );
        fleet_section(&mut md, crate::mixed::KindsFleet::Go, &g.budgets);
        for why in &g.budgets_incomplete {
            let _ = writeln!(md, "- not measured: {}", why.replace('\n', " "));
        }
    }
    (md, goals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pressure::Reclaim;

    #[test]
    fn a_run_under_memory_pressure_says_so_above_its_goals() {
        let at_rest = GoFigures::default();
        assert!(!markdown(&at_rest).0.contains("memory pressure"));
        let pressed = GoFigures {
            reclaim: Reclaim {
                kswapd_kib: 2048,
                direct_stalls: 1,
            },
            ..GoFigures::default()
        };
        let (md, _) = markdown(&pressed);
        let warning = md.find("Measured under memory pressure").expect("warned");
        assert!(warning < md.find("## Goals").expect("goals"));
        assert!(md.contains("2.0 MiB reclaimed by kswapd, 1 allocations stalled"));
    }

    #[test]
    fn the_go_fleets_budgets_are_judged_and_tabled_and_a_failed_one_named() {
        use crate::budget::Budget;
        use crate::fleet::Variant;
        let budget = |variant, mib: u64| Budget {
            fleet: "go".into(),
            variant,
            n: 10,
            unconstrained: crate::workloads::RingRun::empty(variant, 10),
            unconstrained_p99_ms: 9.0,
            probes: Vec::new(),
            budget_bytes: Some(mib << 20),
        };
        let (without, goals) = markdown(&GoFigures::default());
        assert!(!without.contains("Memory budgets"), "{without}");
        assert!(!goals.iter().any(|g| g.goal.contains("budget")));
        let figures = GoFigures {
            budgets: vec![
                budget(Variant::Native, 70),
                budget(Variant::Wasm, 90),
                budget(Variant::WasmSuspend, 80),
            ],
            budgets_incomplete: vec!["budget go fleet N=100 native: OOM\nat start".into()],
            ..GoFigures::default()
        };
        let (md, goals) = markdown(&figures);
        let judged: Vec<Option<bool>> = goals
            .iter()
            .filter(|g| g.goal.contains("memory budget"))
            .map(|g| g.holds)
            .collect();
        assert_eq!(judged, [Some(false), Some(false)], "{goals:?}");
        assert!(md.contains("128.6 % (90 vs 70 MiB)"), "{md}");
        assert!(md.contains("### The Go fleet"), "{md}");
        assert!(md.contains("| native | 10 | 70.0 |"), "{md}");
        assert!(md.contains("- not measured: budget go fleet N=100 native: OOM at start"));
        let latency = goals.last().expect("goals");
        assert!(latency.goal.contains("event→reconcile"), "{latency:?}");
    }
}
