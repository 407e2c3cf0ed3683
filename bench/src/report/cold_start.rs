//! The cold start of distinct modules in the report: compiled in the host's process against
//! compiled in a child (`compileInChild`), its goal (no more than 20 % slower) and its
//! section.

use std::fmt::Write as _;

use super::goals::Goal;
use super::measured::Measured;
use crate::cold_start::ColdStartRun;

/// How much slower a cold start may get with a lever (issue #19).
const COLD_START_SLACK: f64 = 1.20;

fn launch(m: &Measured, compile_in_child: bool) -> Option<&ColdStartRun> {
    m.cold_start
        .iter()
        .find(|r| r.compile_in_child == compile_in_child)
}

/// The cold-start goal: compiling in a child starts the fleet at most 20 % later than
/// compiling in the host (not measured without both launches).
pub(super) fn goals(m: &Measured) -> Vec<Goal> {
    let goal = |n: usize| {
        format!("cold start of {n} distinct modules (empty cache), compiled in a child process")
    };
    let target = format!(
        "≤ {:.0} % of the time compiled in the host",
        COLD_START_SLACK * 100.0
    );
    let (Some(host), Some(child)) = (launch(m, false), launch(m, true)) else {
        return vec![Goal {
            goal: goal(100),
            target,
            measured: "not measured: the cold start did not run (--cold-start-n 0)".into(),
            holds: None,
        }];
    };
    let ratio = child.all_running_s / host.all_running_s.max(f64::MIN_POSITIVE);
    vec![Goal {
        goal: goal(child.modules),
        target,
        measured: format!(
            "{:.0} %: {:.1} s in a child vs {:.1} s in the host; idle PSS {:.1} vs {:.1} MiB",
            ratio * 100.0,
            child.all_running_s,
            host.all_running_s,
            child.idle.pss_kib as f64 / 1024.0,
            host.idle.pss_kib as f64 / 1024.0
        ),
        holds: Some(ratio <= COLD_START_SLACK),
    }]
}

/// The section: both launches side by side.
pub(super) fn section(m: &Measured) -> String {
    let mut s = String::from(
        "\n## Cold start of distinct modules, compiled in the host / in a child (`compileInChild`)\n\n",
    );
    let (Some(host), Some(child)) = (launch(m, false), launch(m, true)) else {
        s.push_str("Not run (`--cold-start-n 0` skips it).\n");
        return s;
    };
    let _ = writeln!(
        s,
        "{} copies of the ring module, each made distinct by a custom section (its own digest, so its own compile and cache entry), in one host with an empty cache; timed from the host's start until the first ring cycle passed through every controller. PSS right then, and after the settle time.\n",
        child.modules
    );
    s.push_str("| compiled | all running, s | PSS then, MiB | idle PSS, MiB | idle RSS, MiB |\n|---|---|---|---|---|\n");
    for (label, run) in [("in the host", host), ("in a child", child)] {
        let mib = |kib: u64| kib as f64 / 1024.0;
        let _ = writeln!(
            s,
            "| {label} | {:.1} | {:.1} | {:.1} | {:.1} |",
            run.all_running_s,
            mib(run.started.pss_kib),
            mib(run.idle.pss_kib),
            mib(run.idle.rss_kib)
        );
    }
    s
}
