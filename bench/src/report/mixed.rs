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

/// The PSS ratio of `variant` to native in `fleet`, with the goal's text.
fn ratio_goal(m: &Measured, fleet: &str, variant: Variant, goal: &str, target: f64) -> Goal {
    let target_text = format!("≤ {:.0} % of native", target * 100.0);
    match (launch(m, fleet, Variant::Native), launch(m, fleet, variant)) {
        (Some(native), Some(wasm)) => {
            let ratio = wasm.idle.pss_kib as f64 / native.idle.pss_kib.max(1) as f64;
            Goal {
                goal: format!(
                    "{goal} ({} controllers of {} kinds)",
                    wasm.instances, wasm.kinds
                ),
                target: target_text,
                measured: format!(
                    "{:.1} %: host {:.1} MiB vs native {:.1} MiB PSS",
                    ratio * 100.0,
                    wasm.idle.pss_kib as f64 / 1024.0,
                    native.idle.pss_kib as f64 / 1024.0
                ),
                holds: Some(ratio <= target),
            }
        }
        _ => Goal {
            goal: goal.into(),
            target: target_text,
            measured: "not measured: the fleet did not run (--mixed-n 0, or no builds given)"
                .into(),
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
        Goal {
            goal: "mixed fleet, suspended, vs the same controllers combined in one native process"
                .into(),
            target: "≤ 1.0×".into(),
            measured: "not measured: no combined-native build of the controllers exists yet".into(),
            holds: None,
        },
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
    s.push_str("Each controller in its own namespace, idle (no objects to reconcile); memory after the settle time. Mixed: the examples, the ring controller and the parity scenario controllers, round-robin; edge: the five examples. Native: one process per controller.\n\n| fleet | controllers | kinds | native PSS, MiB | wasm PSS, MiB | wasm / native | suspended PSS, MiB | suspended / native |\n|---|---|---|---|---|---|---|---|\n");
    for fleet in ["mixed", "edge"] {
        let Some(native) = launch(m, fleet, Variant::Native) else {
            continue;
        };
        let mib = |r: Option<&MixedRun>| r.map_or(f64::NAN, |r| r.idle.pss_kib as f64 / 1024.0);
        let ratio = |r: Option<&MixedRun>| {
            r.map_or(f64::NAN, |r| {
                r.idle.pss_kib as f64 / native.idle.pss_kib.max(1) as f64 * 100.0
            })
        };
        let wasm = launch(m, fleet, Variant::Wasm);
        let suspended = launch(m, fleet, Variant::WasmSuspend);
        let _ = writeln!(
            s,
            "| {fleet} | {} | {} | {:.1} | {:.1} | {:.1} % | {:.1} | {:.1} % |",
            native.instances,
            native.kinds,
            mib(Some(native)),
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
