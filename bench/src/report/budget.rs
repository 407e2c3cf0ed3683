//! Memory budgets and idle CPU in the report (issue #44): their goals, their section and the
//! plot of the budget against N for each variant.

use std::fmt::Write as _;

use super::goals::Goal;
use super::measured::Measured;
use crate::budget::{Budget, IdleCpu, LeverState, LeverVerdict};
use crate::fleet::Variant;
use crate::mixed::KindsFleet;
use crate::reactions::UNOBSERVED;

/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

fn cpu_of(m: &Measured, variant: Variant) -> Option<&IdleCpu> {
    m.idle_cpu.iter().find(|c| c.variant == variant)
}

/// The N a budget goal is judged at among `budgets`: `preferred` if it was measured, else the
/// largest measured (`None`: nothing measured).
fn judged_n(budgets: &[Budget], preferred: Option<usize>) -> Option<usize> {
    let ns = budgets.iter().map(|b| b.n);
    if preferred.is_some_and(|p| ns.clone().any(|n| n == p)) {
        preferred
    } else {
        ns.max()
    }
}

/// The budget ratio of `variant` to native of the ring at 1,000 (else the largest N
/// measured) against `target`.
fn ratio_goal(m: &Measured, variant: Variant, target: f64) -> Goal {
    let what = |n: usize| {
        format!(
            "memory budget of {n} ring controllers, {}, vs {n} native processes",
            variant.label()
        )
    };
    let Some(n) = judged_n(&m.budgets, Some(1000)) else {
        return not_run(
            what(1000),
            target,
            "the budget workload did not run (--budget-n)",
        );
    };
    budget_ratio(what(n), target, &m.budgets, variant, n)
}

/// The budget ratio of `variant` to native of `fleet` against `target`: the edge and Go fleets'
/// at the largest N measured, the mixed fleet's at N = 100 if measured, else at the largest.
fn fleet_goal(m: &Measured, fleet: KindsFleet, variant: Variant, target: f64) -> Goal {
    budgets_goal(m.fleet_budgets(fleet), fleet, variant, target)
}

/// [`fleet_goal`] over `budgets`, `fleet`'s.
fn budgets_goal(budgets: &[Budget], fleet: KindsFleet, variant: Variant, target: f64) -> Goal {
    let (fleet_text, preferred, option) = match fleet {
        KindsFleet::Edge => (
            "the edge fleet (the five examples".to_owned(),
            None,
            "--edge-budget-n",
        ),
        KindsFleet::Mixed => (
            format!("the mixed fleet ({} kinds", fleet.kinds().len()),
            Some(100),
            "--mixed-budget-n",
        ),
        KindsFleet::Go => (
            "the Go fleet (go-configmap-mirror".to_owned(),
            None,
            "--go-budget-n",
        ),
    };
    let what = |n: usize| {
        format!(
            "memory budget of {fleet_text}, N = {n}), {}, vs native",
            variant.label()
        )
    };
    let Some(n) = judged_n(budgets, preferred) else {
        let why = format!("the {} budgets did not run ({option})", fleet.name());
        return not_run(what(preferred.unwrap_or(5)), target, &why);
    };
    budget_ratio(what(n), target, budgets, variant, n)
}

/// Issue #43's memory goals read as budgets: the Go fleet in one host within 50 % of its
/// native Go processes' budget, suspended within 5 %, at the largest N of `budgets` (the Go
/// fleet's).
pub fn go_budget_goals(budgets: &[Budget]) -> Vec<Goal> {
    vec![
        budgets_goal(budgets, KindsFleet::Go, Variant::Wasm, 0.50),
        budgets_goal(budgets, KindsFleet::Go, Variant::WasmSuspend, 0.05),
    ]
}

fn ratio_target(target: f64) -> String {
    format!("≤ {:.0} % of native's budget", target * 100.0)
}

fn not_run(goal: String, target: f64, why: &str) -> Goal {
    Goal {
        goal,
        target: ratio_target(target),
        measured: format!("not measured: {why}"),
        holds: None,
    }
}

/// The goal `goal`: `variant`'s budget among `budgets` ≤ `target` × native's, both at `n`.
fn budget_ratio(goal: String, target: f64, budgets: &[Budget], variant: Variant, n: usize) -> Goal {
    let target_text = ratio_target(target);
    let native = Budget::find(budgets, Variant::Native, n);
    let (Some(native), Some(wasm)) = (native, Budget::find(budgets, variant, n)) else {
        return Goal {
            goal,
            target: target_text,
            measured: format!("not measured at N = {n}"),
            holds: None,
        };
    };
    match (native.budget_bytes, wasm.budget_bytes) {
        (Some(native_bytes), Some(wasm_bytes)) => {
            let ratio = wasm_bytes as f64 / native_bytes as f64;
            Goal {
                goal,
                target: target_text,
                measured: format!(
                    "{:.1} % ({:.0} vs {:.0} MiB)",
                    ratio * 100.0,
                    wasm_bytes as f64 / MIB,
                    native_bytes as f64 / MIB
                ),
                holds: Some(ratio <= target),
            }
        }
        _ => Goal {
            goal,
            target: target_text,
            measured: "no limit that held was found for one of them (see the probes)".into(),
            holds: Some(false),
        },
    }
}

fn cpu_goal(m: &Measured, variant: Variant) -> Goal {
    let goal = format!(
        "idle CPU of idle ring controllers, {}, vs native",
        variant.label()
    );
    match (cpu_of(m, Variant::Native), cpu_of(m, variant)) {
        (Some(native), Some(wasm)) => Goal {
            goal: format!("{goal} (N = {})", wasm.n),
            target: "≤ native's".into(),
            measured: format!(
                "{:.2} vs {:.2} CPU s per hour",
                wasm.settled_rate(),
                native.settled_rate()
            ),
            holds: Some(wasm.settled_rate() <= native.settled_rate()),
        },
        _ => Goal {
            goal,
            target: "≤ native's".into(),
            measured: "not measured: the idle-CPU workload did not run (--idle-cpu-n)".into(),
            holds: None,
        },
    }
}

/// The goals of issue #44 this workload measures, and issue #43's read as budgets
/// ([`go_budget_goals`]) when the Go fleet's ran.
pub fn goals(m: &Measured) -> Vec<Goal> {
    let go = if m.go_budgets.is_empty() {
        Vec::new()
    } else {
        go_budget_goals(&m.go_budgets)
    };
    let ring_and_mixed = vec![
        ratio_goal(m, Variant::Wasm, 0.05),
        ratio_goal(m, Variant::WasmSuspend, 0.02),
        fleet_goal(m, KindsFleet::Edge, Variant::Wasm, 0.30),
        fleet_goal(m, KindsFleet::Edge, Variant::WasmSuspend, 0.30),
        fleet_goal(m, KindsFleet::Mixed, Variant::Wasm, 0.15),
        fleet_goal(m, KindsFleet::Mixed, Variant::WasmSuspend, 0.15),
        cpu_goal(m, Variant::Wasm),
        cpu_goal(m, Variant::WasmSuspend),
    ];
    ring_and_mixed.into_iter().chain(go).collect()
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / MIB)
}

/// The head of a table of budgets ([`budget_rows`]).
const BUDGET_HEADER: &str = "| variant | N | budget MiB | unconstrained p99 ms | idle PSS MiB \
     | idle anon MiB | idle file MiB | peak MiB | probes |\n|---|---|---|---|---|---|---|---|---|\n";

/// One row of the budgets table for each of `budgets`: the budget, its unconstrained
/// figures (PSS next to what the kernel charged the group at idle) and the probes.
fn budget_rows(s: &mut String, budgets: &[Budget]) {
    for b in budgets {
        let c = b.unconstrained.cgroup.as_ref();
        let probes: Vec<String> = b
            .probes
            .iter()
            .map(|p| format!("{} {}", p.limit >> 20, if p.held { "✓" } else { "✗" }))
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.1} | {:.1} | {} | {} | {} | {} |",
            b.variant.label(),
            b.n,
            b.budget_bytes.map_or("none".into(), mib),
            b.unconstrained_p99_ms,
            b.unconstrained.idle.pss_kib as f64 / 1024.0,
            c.map_or("-".into(), |c| mib(c.idle.anon)),
            c.map_or("-".into(), |c| mib(c.idle.file)),
            c.map_or("-".into(), |c| mib(c.peak)),
            probes.join(", ")
        );
    }
}

/// The section of `report.md`: each budget with its unconstrained figures (PSS next to what
/// the kernel charged, anonymous and file-backed), the probes, and the idle CPU.
pub fn section(m: &Measured) -> String {
    let mut s = String::new();
    if m.budgets.is_empty()
        && m.edge_budgets.is_empty()
        && m.mixed_budgets.is_empty()
        && m.go_budgets.is_empty()
        && m.idle_cpu.is_empty()
        && m.lever_judgements.is_empty()
        && m.incomplete.is_empty()
    {
        return s;
    }
    s.push_str("\n## Memory budgets (cgroup limits)\n\n");
    s.push_str(
        "The smallest cgroup memory limit (no swap) each fleet still runs in: nothing \
         OOM-killed, every ring cycle through every controller, event→reconcile p99 within 2× \
         the same variant's without a limit; bisected to 5 %. Unconstrained: PSS (smaps_rollup) \
         next to what the kernel charged the group at idle, anonymous and file-backed.\n\n",
    );
    s.push_str(BUDGET_HEADER);
    budget_rows(&mut s, &m.budgets);
    for fleet in [KindsFleet::Edge, KindsFleet::Go, KindsFleet::Mixed] {
        fleet_section(&mut s, fleet, m.fleet_budgets(fleet));
    }
    s.push_str(&super::scale::section(m));
    if !m.idle_cpu.is_empty() {
        s.push_str(
            "\n### Idle CPU\n\nThe fleet's CPU per hour in equal windows of the idle time after \
             the last event: the mean of the windows after the first (which holds the fleet \
             going idle), and over the whole time.\n\n\
             | variant | N | CPU s per hour | whole time | windows, min–max | measured over s |\n\
             |---|---|---|---|---|---|\n",
        );
        for c in &m.idle_cpu {
            let lo = c
                .windows_s_per_hour
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min);
            let hi = c.windows_s_per_hour.iter().copied().fold(0.0, f64::max);
            let range = if c.windows_s_per_hour.is_empty() {
                "-".to_owned()
            } else {
                format!("{} × {lo:.1}–{hi:.1}", c.windows_s_per_hour.len())
            };
            let _ = writeln!(
                s,
                "| {} | {} | {:.2} | {:.2} | {range} | {:.0} |",
                c.variant.label(),
                c.n,
                c.settled_rate(),
                c.whole_rate(),
                c.window_s
            );
        }
    }
    s.push_str(&levers_section(m));
    if !m.incomplete.is_empty() {
        s.push_str("\n### Not measured\n\nLaunches of this stage that failed (the stage went on without them):\n\n");
        for why in &m.incomplete {
            let _ = writeln!(s, "- {}", why.replace('\n', " "));
        }
    }
    s
}

/// The subsection of `fleet`'s `budgets` (nothing without them): how a cycle goes, the
/// budgets table, then each budget's unconstrained p99 by kind.
pub fn fleet_section(s: &mut String, fleet: KindsFleet, budgets: &[Budget]) {
    if budgets.is_empty() {
        return;
    }
    match fleet {
        KindsFleet::Edge => s.push_str(
            "\n### The edge fleet\n\nThe five examples, N instances round-robin, each in its own \
             namespace. A cycle is one change to every instance (a ConfigMap, or a \
             ConfigMapGenerator, of its own) and each controller's answer (a mirror Secret, a \
             generated or dependent ConfigMap, a store summary or a watch log listing it; \
             store-reader writes its summary once a second).",
        ),
        KindsFleet::Go => s.push_str(
            "\n### The Go fleet\n\n`examples/go-configmap-mirror` (client-go: an informer and \
             a workqueue), N instances, each in its own namespace: N native Go processes, or N \
             modules in one host (suspended with `costFactor: 0`, as the Go porting guide \
             advises). A cycle is one labelled ConfigMap of its own for every instance and each \
             controller's mirror Secret.",
        ),
        KindsFleet::Mixed => {
            let kinds = fleet.kinds();
            let _ = write!(
                s,
                "\n### The mixed fleet\n\nEvery kind of the mixed fleet ({}: the five examples, the \
                 ring controller and the parity scenario controllers), N instances round-robin, \
                 each in its own namespace. A cycle is one change to every instance whose kind \
                 answers observably ({} kinds: a ConfigMap, ConfigMapGenerator, Ring, Widget or \
                 Team of its own) and each controller's answer (the edge fleet's, a Ring copied \
                 into its namespace, a Widget's annotation or status phase, a ConfigMap made for \
                 a Widget, a roster entry for a Team). The kinds that only read, or answer once \
                 a launch, run unstimulated: {}.",
                kinds.len(),
                kinds.len() - UNOBSERVED.len(),
                UNOBSERVED.join(", ")
            );
        }
    }
    s.push_str(
        " A probe holds when each kind's p99 stays within twice that kind's without a limit; the \
         table's p99 is over every answer, the kinds' follow it.\n\n",
    );
    s.push_str(BUDGET_HEADER);
    budget_rows(s, budgets);
    s.push('\n');
    for b in budgets {
        let kinds: Vec<String> = b
            .unconstrained
            .reconcile_by_kind_ms
            .iter()
            .filter_map(|(kind, latencies)| {
                Some(format!(
                    "{kind} {:.1}",
                    crate::stats::percentile(latencies, 99.0)?
                ))
            })
            .collect();
        let _ = writeln!(
            s,
            "- {} N = {}, unconstrained p99 by kind (ms): {}",
            b.variant.label(),
            b.n,
            kinds.join(", ")
        );
    }
}

/// The levers judged under the budget: each off against every lever on, with whether it
/// pays (see [`crate::budget::lever_pays`]).
fn levers_section(m: &Measured) -> String {
    let mut s = String::new();
    if m.lever_judgements.is_empty() {
        return s;
    }
    s.push_str(
        "\n### The memory levers under the budget\n\nEach lever off in turn against every lever \
         on: the budget, the idle CPU, and the next event's event→reconcile latency (the first \
         cycle after the idle settle time). A lever stays when turning it off costs at least \
         2 % of budget or idle CPU, as far as one run resolves it: the budget by a probe that \
         failed without the lever at least 2 % above the limit that held with it, the idle CPU \
         by its windows (the mean 2 % higher without the lever, and by more than twice the \
         standard error of the difference).\n\n| lever | variant | N | budget on → \
         off MiB | idle CPU on → off s/h | next event on → off ms | verdict |\n|---|---|---|---|---|---|---|\n",
    );
    for j in &m.lever_judgements {
        let on = m.budget(j.variant, j.n);
        let on_cpu = m.idle_cpu_at(j.variant, j.n);
        let bytes = |b: Option<u64>| b.map_or("none".into(), mib);
        let next = |b: Option<&Budget>| {
            b.and_then(|b| crate::budget::next_event_ms(&b.unconstrained))
                .map_or("-".into(), |ms| format!("{ms:.1}"))
        };
        let verdict = match (on, on_cpu) {
            (Some(on), Some(on_cpu)) => crate::budget::lever_pays(
                LeverState {
                    budget: on,
                    cpu: on_cpu,
                },
                LeverState {
                    budget: &j.off,
                    cpu: &j.off_cpu,
                },
            )
            .label(),
            _ => LeverVerdict::NoBaseline.label(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} → {} | {} → {:.2} | {} → {} | {verdict} |",
            j.lever.label(),
            j.variant.label(),
            j.n,
            bytes(on.and_then(|b| b.budget_bytes)),
            bytes(j.off.budget_bytes),
            on_cpu.map_or("-".into(), |c| format!("{:.2}", c.settled_rate())),
            j.off_cpu.settled_rate(),
            next(on),
            next(Some(&j.off)),
        );
    }
    s
}

/// The budget against N for each variant, in MiB (for the plot).
pub fn series(m: &Measured) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut variants: Vec<Variant> = m.budgets.iter().map(|b| b.variant).collect();
    variants.sort();
    variants.dedup();
    variants
        .into_iter()
        .map(|v| {
            let mut points: Vec<(f64, f64)> = m
                .budgets
                .iter()
                .filter(|b| b.variant == v)
                .filter_map(|b| Some((b.n as f64, b.budget_bytes? as f64 / MIB)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            (v.label().to_owned(), points)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_launch_of_the_stage_is_listed_not_dropped() {
        let m = Measured {
            incomplete: vec![
                "budget ring N=1000 native: the launch without a limit:\ntimed out".into(),
            ],
            ..Measured::default()
        };
        let s = section(&m);
        assert!(s.contains("### Not measured"), "{s}");
        assert!(
            s.contains("- budget ring N=1000 native: the launch without a limit: timed out"),
            "{s}"
        );
        assert!(section(&Measured::default()).is_empty());
    }

    fn edge(variant: Variant, n: usize, mib: Option<u64>) -> Budget {
        Budget {
            fleet: "edge".into(),
            variant,
            n,
            unconstrained: crate::workloads::RingRun::empty(variant, n),
            unconstrained_p99_ms: 40.0,
            probes: Vec::new(),
            budget_bytes: mib.map(|mib| mib << 20),
        }
    }

    #[test]
    fn the_edge_goal_compares_the_edge_fleets_alone_at_their_largest_n() {
        let m = Measured {
            edge_budgets: vec![
                edge(Variant::Native, 5, Some(100)),
                edge(Variant::Wasm, 5, Some(90)),
                edge(Variant::Native, 10, Some(200)),
                edge(Variant::Wasm, 10, Some(60)),
                edge(Variant::WasmSuspend, 10, None),
            ],
            // A ring budget of the same N and variant must not be taken for the edge fleet's.
            budgets: vec![edge(Variant::Wasm, 10, Some(1))],
            ..Measured::default()
        };
        let wasm = fleet_goal(&m, KindsFleet::Edge, Variant::Wasm, 0.30);
        assert_eq!(wasm.holds, Some(true), "{wasm:?}");
        assert!(wasm.goal.contains("N = 10"), "{wasm:?}");
        assert!(
            wasm.measured.starts_with("30.0 % (60 vs 200 MiB)"),
            "{wasm:?}"
        );
        let suspended = fleet_goal(&m, KindsFleet::Edge, Variant::WasmSuspend, 0.30);
        assert_eq!(suspended.holds, Some(false), "no limit held: {suspended:?}");
        let none = fleet_goal(&Measured::default(), KindsFleet::Edge, Variant::Wasm, 0.30);
        assert_eq!(none.holds, None);
        let s = section(&m);
        assert!(s.contains("### The edge fleet"), "{s}");
        assert!(s.contains("| wasm | 10 | 60.0 |"), "{s}");
    }

    #[test]
    fn the_mixed_goal_holds_the_host_to_15_percent_of_native_at_100() {
        let mixed = |variant, n, mib| Budget {
            fleet: "mixed".into(),
            ..edge(variant, n, mib)
        };
        let m = Measured {
            mixed_budgets: vec![
                mixed(Variant::Native, 100, Some(400)),
                mixed(Variant::Wasm, 100, Some(60)),
                mixed(Variant::WasmSuspend, 100, Some(61)),
                // A larger N is not judged while N = 100 was measured.
                mixed(Variant::Native, 200, Some(800)),
                mixed(Variant::Wasm, 200, Some(1)),
            ],
            // The edge fleet's budgets of the same N and variants are not the mixed fleet's.
            edge_budgets: vec![
                edge(Variant::Native, 100, Some(1000)),
                edge(Variant::WasmSuspend, 100, Some(1)),
            ],
            ..Measured::default()
        };
        let wasm = fleet_goal(&m, KindsFleet::Mixed, Variant::Wasm, 0.15);
        assert_eq!(wasm.holds, Some(true), "{wasm:?}");
        assert!(
            wasm.goal.contains("mixed fleet (18 kinds, N = 100)"),
            "{wasm:?}"
        );
        assert!(
            wasm.measured.starts_with("15.0 % (60 vs 400 MiB)"),
            "{wasm:?}"
        );
        assert_eq!(wasm.target, "≤ 15 % of native's budget");
        let suspended = fleet_goal(&m, KindsFleet::Mixed, Variant::WasmSuspend, 0.15);
        assert_eq!(suspended.holds, Some(false), "61 of 400 MiB: {suspended:?}");
        // Without N = 100, the largest N measured.
        let smaller = Measured {
            mixed_budgets: vec![
                mixed(Variant::Native, 18, Some(150)),
                mixed(Variant::Wasm, 18, Some(50)),
                mixed(Variant::Native, 36, Some(200)),
                mixed(Variant::Wasm, 36, Some(20)),
            ],
            ..Measured::default()
        };
        let at_36 = fleet_goal(&smaller, KindsFleet::Mixed, Variant::Wasm, 0.15);
        assert!(at_36.goal.contains("N = 36"), "{at_36:?}");
        assert_eq!(at_36.holds, Some(true), "{at_36:?}");
        let not_run = fleet_goal(&Measured::default(), KindsFleet::Mixed, Variant::Wasm, 0.15);
        assert_eq!(not_run.holds, None);
        assert!(not_run.measured.contains("--mixed-budget-n"), "{not_run:?}");
        let judged: Vec<Option<bool>> = goals(&m)
            .iter()
            .filter(|g| g.goal.contains("mixed fleet"))
            .map(|g| g.holds)
            .collect();
        assert_eq!(
            judged,
            [Some(true), Some(false)],
            "the host's and the suspended host's"
        );
        let s = section(&m);
        assert!(s.contains("### The mixed fleet"), "{s}");
        assert!(s.contains("(13 kinds"), "{s}");
        assert!(s.contains("parity-paging, parity-reflector"), "{s}");
        assert!(s.contains("| wasm | 100 | 60.0 |"), "{s}");
        assert!(
            s.contains("- native N = 100, unconstrained p99 by kind"),
            "{s}"
        );
    }

    #[test]
    fn the_go_goals_read_issue_43s_ratios_as_budgets_and_show_only_when_measured() {
        let go = |variant, n, mib| Budget {
            fleet: "go".into(),
            ..edge(variant, n, mib)
        };
        let budgets = vec![
            go(Variant::Native, 10, Some(72)),
            go(Variant::Wasm, 10, Some(36)),
            go(Variant::WasmSuspend, 10, Some(4)),
        ];
        let goals = go_budget_goals(&budgets);
        let holds: Vec<Option<bool>> = goals.iter().map(|g| g.holds).collect();
        // 36/72 = 50 % holds ≤ 50 %; 4/72 = 5.6 % fails ≤ 5 %.
        assert_eq!(holds, [Some(true), Some(false)], "{goals:?}");
        assert!(
            goals[0]
                .goal
                .contains("the Go fleet (go-configmap-mirror, N = 10), wasm"),
            "{goals:?}"
        );
        assert_eq!(goals[1].target, "≤ 5 % of native's budget");
        let none = go_budget_goals(&[]);
        assert_eq!(none[0].holds, None);
        assert!(none[0].measured.contains("--go-budget-n"), "{none:?}");

        let without = goals_of(&Measured::default());
        assert!(
            !without.iter().any(|g| g.contains("Go fleet")),
            "{without:?}"
        );
        let m = Measured {
            go_budgets: budgets,
            // The edge fleet's budgets of the same N are not the Go fleet's.
            edge_budgets: vec![edge(Variant::Native, 10, Some(1))],
            ..Measured::default()
        };
        let with = goals_of(&m);
        assert_eq!(
            with.iter().filter(|g| g.contains("Go fleet")).count(),
            2,
            "{with:?}"
        );
        let s = section(&m);
        assert!(s.contains("### The Go fleet"), "{s}");
        assert!(s.contains("| wasm-suspend | 10 | 4.0 |"), "{s}");
    }

    fn goals_of(m: &Measured) -> Vec<String> {
        goals(m).into_iter().map(|g| g.goal).collect()
    }
}
