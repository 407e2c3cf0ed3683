//! The replicas workload in the report: its goals (failover, handoff, modules moved on
//! scale-up, never twice) and its section.

use std::fmt::Write as _;

use super::goals::Goal;
use super::measured::Measured;
use crate::stats;

/// The goals of issue #18, judged on the replicas run (not measured without one).
pub(super) fn goals(m: &Measured) -> Vec<Goal> {
    let Some(r) = &m.replicas else {
        let why = m
            .replicas_skipped
            .clone()
            .unwrap_or_else(|| "not run".into());
        return [
            "failover: SIGKILL of a replica → its modules reconciling elsewhere",
            "handoff: SIGTERM of a replica → its modules running elsewhere",
            "modules moved when a 4th replica joins 3",
        ]
        .map(|goal| Goal {
            goal: goal.into(),
            target: "see issue #18".into(),
            measured: format!("not measured: {why}"),
            holds: None,
        })
        .into();
    };
    let max = |v: &[f64]| {
        v.iter()
            .copied()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    let failover = match (stats::median(&r.failover_s), max(&r.failover_s)) {
        (Some(p50), Some(worst)) => Goal {
            goal: format!(
                "failover: SIGKILL of a replica → its {} modules reconciling elsewhere (Lease {} s)",
                r.failover_s.len(),
                r.lease_duration_s
            ),
            target: "≤ 15 s".into(),
            measured: format!("median {p50:.1} s, max {worst:.1} s"),
            holds: Some(worst <= 15.0),
        },
        _ => Goal {
            goal: "failover: SIGKILL of a replica → its modules reconciling elsewhere".into(),
            target: "≤ 15 s".into(),
            measured: "not measured: the killed replica ran no module".into(),
            holds: None,
        },
    };
    let handoff = match (max(&r.handoff_s), max(&r.handoff_gap_s)) {
        (Some(worst), Some(gap)) => Goal {
            goal: format!(
                "handoff: SIGTERM of a replica → its {} modules running elsewhere, never twice",
                r.handoff_s.len()
            ),
            target: format!("≤ the stop timeout ({} s), no overlap", r.stop_timeout_s),
            measured: format!(
                "max {worst:.2} s after the SIGTERM, {gap:.2} s after the stop there; {} overlapping runs",
                r.overlaps.len()
            ),
            holds: Some(worst <= r.stop_timeout_s && r.overlaps.is_empty()),
        },
        _ => Goal {
            goal: "handoff: SIGTERM of a replica → its modules running elsewhere".into(),
            target: format!("≤ the stop timeout ({} s)", r.stop_timeout_s),
            measured: "not measured: the stopped replica ran no module".into(),
            holds: None,
        },
    };
    let quarter = r.modules as f64 / 4.0;
    let moved = Goal {
        goal: format!(
            "modules moved when a 4th replica joins 3 ({} modules)",
            r.modules
        ),
        target: format!("about a quarter (≈ {quarter:.1}), only to the new replica"),
        measured: format!(
            "{} moved ({:.0} %), {} elsewhere",
            r.scale_up_moved,
            100.0 * r.scale_up_moved as f64 / r.modules.max(1) as f64,
            r.scale_up_moved_elsewhere
        ),
        // Rendezvous hashing moves each module with probability 1/4: allow 1.6× the mean.
        holds: Some(r.scale_up_moved_elsewhere == 0 && (r.scale_up_moved as f64) <= quarter * 1.6),
    };
    vec![failover, handoff, moved]
}

/// The report's section on the replicas run.
pub(super) fn section(m: &Measured) -> String {
    let mut s = String::from("\n## Replicas: failover, handoff, rebalancing\n\n");
    let Some(r) = &m.replicas else {
        let _ = writeln!(
            s,
            "Not run: {}.",
            m.replicas_skipped.as_deref().unwrap_or("not selected")
        );
        return s;
    };
    let list = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v.iter()
            .map(|x| format!("{x:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        s,
        "{} WasmControllers (configmap-mirror, a namespace each) shared by host replicas through membership Leases (duration {} s, stop timeout {} s).\n\n- Failover, SIGKILL → the next change mirrored by the module's new replica, s: {}\n- Handoff, SIGTERM → the module started on its next replica, s: {}\n- Handoff gap, the module's stop on the leaving replica → its start on the next, s: {}\n- Scale-up 3 → 4 replicas: {} modules moved ({} not to the new replica)\n- Overlapping runs of a module on two replicas: {}",
        r.modules,
        r.lease_duration_s,
        r.stop_timeout_s,
        list(&r.failover_s),
        list(&r.handoff_s),
        list(&r.handoff_gap_s),
        r.scale_up_moved,
        r.scale_up_moved_elsewhere,
        r.overlaps.len()
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replicas::ReplicasRun;

    fn measured(run: ReplicasRun) -> Measured {
        Measured {
            replicas: Some(run),
            ..Measured::default()
        }
    }

    fn run() -> ReplicasRun {
        ReplicasRun {
            modules: 30,
            lease_duration_s: 10.0,
            stop_timeout_s: 5.0,
            failover_s: vec![10.1, 10.3],
            handoff_s: vec![0.4, 1.2],
            handoff_gap_s: vec![0.2, 0.3],
            scale_up_moved: 8,
            scale_up_moved_elsewhere: 0,
            overlaps: Vec::new(),
        }
    }

    fn verdicts(run: ReplicasRun) -> Vec<Option<bool>> {
        goals(&measured(run)).iter().map(|g| g.holds).collect()
    }

    #[test]
    fn each_replica_goal_fails_on_its_own_figure() {
        assert_eq!(verdicts(run()), [Some(true); 3]);
        let slow = ReplicasRun {
            failover_s: vec![10.0, 15.5],
            ..run()
        };
        assert_eq!(verdicts(slow), [Some(false), Some(true), Some(true)]);
        let twice = ReplicasRun {
            overlaps: vec!["m: a overlaps b".into()],
            ..run()
        };
        assert_eq!(verdicts(twice), [Some(true), Some(false), Some(true)]);
        let late = ReplicasRun {
            handoff_s: vec![5.5],
            ..run()
        };
        assert_eq!(verdicts(late), [Some(true), Some(false), Some(true)]);
        let elsewhere = ReplicasRun {
            scale_up_moved_elsewhere: 1,
            ..run()
        };
        assert_eq!(verdicts(elsewhere), [Some(true), Some(true), Some(false)]);
        let too_many = ReplicasRun {
            scale_up_moved: 13,
            ..run()
        };
        assert_eq!(verdicts(too_many), [Some(true), Some(true), Some(false)]);
        let skipped = Measured {
            replicas: None,
            replicas_skipped: Some("--replicas-modules 0".into()),
            ..measured(run())
        };
        assert!(goals(&skipped).iter().all(|g| g.holds.is_none()));
    }
}
