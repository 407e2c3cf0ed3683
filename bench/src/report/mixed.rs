//! Fleets of distinct controllers in the report (the mixed fleet and the edge fleet): their
//! goals (issue #19) and their section.

use std::fmt::Write as _;

use super::goals::Goal;
use super::measured::Measured;
use crate::fleet::Variant;
use crate::mixed::MixedRun;

fn launch<'a>(m: &'a Measured, fleet: &str, variant: Variant) -> Option<&'a MixedRun> {
    m.mixed
        .iter()
        .find(|r| r.fleet == fleet && r.variant == variant)
}

/// `run`'s idle PSS as a multiple of `baseline`'s.
fn pss_ratio(run: &MixedRun, baseline: &MixedRun) -> f64 {
    run.idle.pss_kib as f64 / baseline.idle.pss_kib.max(1) as f64
}

fn mib(run: &MixedRun) -> f64 {
    run.idle.pss_kib as f64 / 1024.0
}

const NOT_RUN: &str = "not measured: the fleet did not run (--mixed-n 0, or no builds given)";

/// The PSS ratio of `variant` to native processes in `fleet`, with the goal's text.
fn ratio_goal(m: &Measured, fleet: &str, variant: Variant, goal: &str, target: f64) -> Goal {
    let target_text = format!("≤ {:.0} % of native", target * 100.0);
    match (launch(m, fleet, Variant::Native), launch(m, fleet, variant)) {
        (Some(native), Some(wasm)) => {
            let ratio = pss_ratio(wasm, native);
            Goal {
                goal: format!(
                    "{goal} ({} controllers of {} kinds)",
                    wasm.instances, wasm.kinds
                ),
                target: target_text,
                measured: format!(
                    "{:.1} %: host {:.1} MiB vs native {:.1} MiB PSS",
                    ratio * 100.0,
                    mib(wasm),
                    mib(native)
                ),
                holds: Some(ratio <= target),
            }
        }
        _ => Goal {
            goal: goal.into(),
            target: target_text,
            measured: NOT_RUN.into(),
            holds: None,
        },
    }
}

/// The mixed fleet suspended against the same controllers linked into one native process:
/// isolation for less memory than giving it up (≤ 1.0×).
fn combined_goal(m: &Measured) -> Goal {
    let goal = "mixed fleet, suspended, vs the same controllers combined in one native process";
    match (
        launch(m, "mixed", Variant::CombinedNative),
        launch(m, "mixed", Variant::WasmSuspend),
    ) {
        (Some(combined), Some(suspended)) => {
            let ratio = pss_ratio(suspended, combined);
            Goal {
                goal: format!(
                    "{goal} ({} controllers of {} kinds)",
                    suspended.instances, suspended.kinds
                ),
                target: "≤ 1.0×".into(),
                measured: format!(
                    "{ratio:.2}×: host {:.1} MiB vs combined {:.1} MiB PSS",
                    mib(suspended),
                    mib(combined)
                ),
                holds: Some(ratio <= 1.0),
            }
        }
        _ => Goal {
            goal: goal.into(),
            target: "≤ 1.0×".into(),
            measured: NOT_RUN.into(),
            holds: None,
        },
    }
}

/// The goals of the mixed and edge fleets.
pub(super) fn goals(m: &Measured) -> Vec<Goal> {
    vec![
        ratio_goal(
            m,
            "mixed",
            Variant::Wasm,
            "mixed fleet, idle, host included, vs the same controllers as native processes",
            0.20,
        ),
        ratio_goal(
            m,
            "mixed",
            Variant::WasmSuspend,
            "mixed fleet, idle modules suspended, vs native processes",
            0.05,
        ),
        combined_goal(m),
        ratio_goal(
            m,
            "edge",
            Variant::Wasm,
            "edge fleet: the five examples in one host vs five native processes",
            0.50,
        ),
    ]
}

/// The section: every launch, and the native memory per kind.
pub(super) fn section(m: &Measured) -> String {
    let mut s = String::from("\n## Fleets of distinct controllers (mixed, edge)\n\n");
    if m.mixed.is_empty() {
        s.push_str("Not run (`--mixed-n 0` skips it; it needs `--native-dir` and `--wasm-dir`).\n");
        return s;
    }
    s.push_str("Each controller in its own namespace, idle (no objects to reconcile); memory after the settle time. Mixed: the examples, the ring controller and the parity scenario controllers, round-robin; edge: the five examples. Native: one process per controller; combined: one native process linking them all.\n\n| fleet | controllers | kinds | native PSS, MiB | combined native PSS, MiB | wasm PSS, MiB | wasm / native | suspended PSS, MiB | suspended / native | suspended / combined |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for fleet in ["mixed", "edge"] {
        let Some(native) = launch(m, fleet, Variant::Native) else {
            continue;
        };
        let mib = |r: Option<&MixedRun>| r.map_or(f64::NAN, mib);
        let ratio = |r: Option<&MixedRun>| r.map_or(f64::NAN, |r| pss_ratio(r, native) * 100.0);
        let combined = launch(m, fleet, Variant::CombinedNative);
        let wasm = launch(m, fleet, Variant::Wasm);
        let suspended = launch(m, fleet, Variant::WasmSuspend);
        let to_combined = match (suspended, combined) {
            (Some(held), Some(linked)) => pss_ratio(held, linked),
            _ => f64::NAN,
        };
        let _ = writeln!(
            s,
            "| {fleet} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} % | {:.1} | {:.1} % | {to_combined:.2}× |",
            native.instances,
            native.kinds,
            mib(Some(native)),
            mib(combined),
            mib(wasm),
            ratio(wasm),
            mib(suspended),
            ratio(suspended)
        );
    }
    if let Some(native) = launch(m, "mixed", Variant::Native) {
        s.push_str(
            "\nNative idle PSS per process, by kind (KiB):\n\n| kind | PSS, KiB |\n|---|---|\n",
        );
        for (kind, kib) in &native.per_kind_kib {
            let _ = writeln!(s, "| {kind} | {kib} |");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Sample;

    fn run(fleet: &str, variant: Variant, pss_mib: u64) -> MixedRun {
        MixedRun {
            fleet: fleet.into(),
            variant,
            kinds: 18,
            instances: 100,
            idle: Sample {
                pss_kib: pss_mib * 1024,
                rss_kib: pss_mib * 2048,
                pss_anon_kib: pss_mib * 512,
            },
            per_kind_kib: Default::default(),
        }
    }

    fn measured(suspended_mib: u64, combined_mib: Option<u64>) -> Measured {
        let mut mixed = vec![
            run("mixed", Variant::Native, 190),
            run("mixed", Variant::Wasm, 30),
            run("mixed", Variant::WasmSuspend, suspended_mib),
        ];
        mixed.extend(combined_mib.map(|mib| run("mixed", Variant::CombinedNative, mib)));
        Measured {
            mixed,
            ..Measured::default()
        }
    }

    #[test]
    fn the_suspended_fleet_is_held_against_the_combined_native_process() {
        let verdict = |m: &Measured| combined_goal(m).holds;
        assert_eq!(verdict(&measured(19, Some(20))), Some(true));
        assert_eq!(verdict(&measured(20, Some(20))), Some(true));
        assert_eq!(verdict(&measured(21, Some(20))), Some(false));
        assert_eq!(verdict(&measured(19, None)), None);
        let goal = combined_goal(&measured(10, Some(40)));
        assert_eq!(
            goal.measured,
            "0.25×: host 10.0 MiB vs combined 40.0 MiB PSS"
        );
        let table = section(&measured(10, Some(40)));
        assert!(
            table.contains("| 190.0 | 40.0 | 30.0 | 15.8 % | 10.0 | 5.3 % | 0.25× |"),
            "{table}"
        );
    }
}
