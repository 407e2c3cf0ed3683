//! The chaos soak in the report (issue #44): its goal — the soak at N = 1,000 for 60 minutes
//! passes (nothing lost, the host's memory flat per incarnation, no healthy module stalled) —
//! and a section with its checks and figures, from the `report.json` of `scripts/soak.sh`.

use std::fmt::Write as _;

use super::goals::Goal;
use super::measured::Measured;

/// The healthy modules the goal's soak runs.
const GOAL_MODULES: usize = 1_000;
/// How long the goal's soak runs, in seconds.
const GOAL_SECS: f64 = 3_600.0;

/// Whether the soak handed in passed at the goal's size; not measured without one.
pub(super) fn goal(m: &Measured) -> Goal {
    let goal = format!(
        "the chaos soak at N = {GOAL_MODULES} for {} minutes passes",
        GOAL_SECS / 60.0
    );
    let target = "nothing lost, memory flat per incarnation, no healthy module stalled".to_owned();
    let Some(s) = &m.soak else {
        return Goal {
            goal,
            target,
            measured: "not measured: no soak report handed in (scripts/bench.sh --soak)".into(),
            holds: None,
        };
    };
    let failed: Vec<&str> = s
        .checks
        .iter()
        .filter(|c| !c.holds)
        .map(|c| c.name.as_str())
        .collect();
    let size = format!("{} modules, {:.0} min", s.modules, s.duration_secs / 60.0);
    let at_size = s.modules >= GOAL_MODULES && s.duration_secs >= GOAL_SECS;
    let verdict = match (failed.is_empty(), at_size) {
        (true, true) => "every check holds".to_owned(),
        (true, false) => "every check holds, but smaller than the goal's soak".to_owned(),
        (false, _) => format!("fails: {}", failed.join(", ")),
    };
    Goal {
        goal,
        target,
        measured: format!("{size}: {verdict}"),
        holds: Some(s.passed && failed.is_empty() && at_size),
    }
}

fn secs(s: Option<f64>) -> String {
    s.map_or("–".into(), crate::soak::report::secs)
}

/// The soak's section: parameters, checks, latency and memory per incarnation.
pub(super) fn section(m: &Measured) -> String {
    let mut s = String::from("\n## The chaos soak\n\n");
    let Some(soak) = &m.soak else {
        s.push_str("Not run (`scripts/bench.sh --soak DURATION`).\n");
        return s;
    };
    for line in &soak.parameters {
        let _ = writeln!(s, "- {line}");
    }
    let _ = writeln!(
        s,
        "\n{} changes, {} lost; event→reconcile p50 {}, p99 {}; {} disruptions, the API server down {:.0} s in all; {} restarts of healthy modules.\n\n| check | | figure |\n|---|---|---|",
        soak.changes,
        soak.lost,
        secs(soak.latency_p50_secs),
        secs(soak.latency_p99_secs),
        soak.disruptions,
        soak.downtime_secs,
        soak.healthy_restarts
    );
    for c in &soak.checks {
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            c.name,
            if c.holds { "holds" } else { "FAILS" },
            c.figure
        );
    }
    s.push_str(
        "\nThe host's PSS per incarnation (after the warm-up; median of the first third → the last third):\n\n| incarnation | first, MiB | last, MiB | peak, MiB | growth |\n|---|---|---|---|---|\n",
    );
    let mib = |kib: u64| kib as f64 / 1024.0;
    for (incarnation, trend) in &soak.memory {
        match trend {
            Some(t) => {
                let _ = writeln!(
                    s,
                    "| {incarnation} | {:.1} | {:.1} | {:.1} | {:+.1} % |",
                    mib(t.first_kib),
                    mib(t.last_kib),
                    mib(t.peak_kib),
                    t.growth_percent
                );
            }
            None => {
                let _ = writeln!(s, "| {incarnation} | – | – | – | too few samples |");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soak::report::{Check, Summary};

    fn summary(modules: usize, duration_secs: f64, holds: bool) -> Summary {
        Summary {
            modules,
            duration_secs,
            parameters: vec!["60 min of traffic".into()],
            changes: 36_000,
            lost: 0,
            latency_p50_secs: Some(0.05),
            latency_p99_secs: Some(0.4),
            disruptions: 89,
            downtime_secs: 120.0,
            memory: vec![(1, None)],
            healthy_restarts: 0,
            checks: vec![
                Check {
                    name: "nothing lost".into(),
                    figure: "36000 of 36000".into(),
                    holds: true,
                },
                Check {
                    name: "no healthy module stalled".into(),
                    figure: "longest wait 41 s".into(),
                    holds,
                },
            ],
            passed: holds,
        }
    }

    fn judged(soak: Option<Summary>) -> Option<bool> {
        goal(&Measured {
            soak,
            ..Measured::default()
        })
        .holds
    }

    #[test]
    fn the_soak_goal_needs_a_passing_soak_of_the_goals_size() {
        assert_eq!(judged(None), None);
        assert_eq!(judged(Some(summary(1_000, 3_600.0, true))), Some(true));
        assert_eq!(judged(Some(summary(1_000, 3_600.0, false))), Some(false));
        assert_eq!(judged(Some(summary(20, 3_600.0, true))), Some(false));
        assert_eq!(judged(Some(summary(1_000, 600.0, true))), Some(false));
        let failing = goal(&Measured {
            soak: Some(summary(1_000, 3_600.0, false)),
            ..Measured::default()
        });
        assert_eq!(
            failing.measured,
            "1000 modules, 60 min: fails: no healthy module stalled"
        );
    }

    #[test]
    fn the_section_lists_every_check_and_incarnation() {
        let m = Measured {
            soak: Some(summary(1_000, 3_600.0, false)),
            ..Measured::default()
        };
        let text = section(&m);
        assert!(text.contains("| nothing lost | holds | 36000 of 36000 |"));
        assert!(text.contains("| no healthy module stalled | FAILS | longest wait 41 s |"));
        assert!(text.contains("| 1 | – | – | – | too few samples |"));
        assert!(text.contains("p99 400 ms"));
    }
}
