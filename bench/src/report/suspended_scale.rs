//! Suspended modules by the thousand in the report (issue #44): a table of the launches
//! (start-up, memory per module, snapshots, probe latency and host CPU per event at each N)
//! and the goal that the host's work per event does not grow with N.

use std::fmt::Write as _;

use super::goals::Goal;
use super::measured::Measured;
use crate::stats;
use crate::suspended_scale::SuspendedScale;

/// How much more a probe event may cost at the largest N than at the smallest — CPU time
/// and p99 alike — and still count as not growing with N (the noise of a few dozen events on
/// a shared machine).
const GROWTH_ALLOWED: f64 = 2.0;

/// The kind whose probe p99 grew most from `small` to `large`: `(kind, p99 small, p99
/// large)`, in ms; `None` if no kind answered in both.
fn worst_kind<'a>(
    small: &'a SuspendedScale,
    large: &'a SuspendedScale,
) -> Option<(&'a str, f64, f64)> {
    small
        .latency_by_kind_ms
        .iter()
        .filter_map(|(kind, latencies)| {
            let before = stats::percentile(latencies, 99.0)?;
            let after = stats::percentile(large.latency_by_kind_ms.get(kind)?, 99.0)?;
            Some((kind.as_str(), before, after))
        })
        .max_by(|a, b| (a.2 / a.1).total_cmp(&(b.2 / b.1)))
}

/// The smallest and the largest N launched, if they differ.
fn extremes(m: &Measured) -> Option<(&SuspendedScale, &SuspendedScale)> {
    let smallest = m.suspended_scale.iter().min_by_key(|s| s.n)?;
    let largest = m.suspended_scale.iter().max_by_key(|s| s.n)?;
    (largest.n > smallest.n).then_some((smallest, largest))
}

/// The host's CPU time per event (idle rate taken out) and each kind's probe p99 at the
/// largest N against the smallest.
pub(super) fn goal(m: &Measured) -> Goal {
    let goal = "per event, the host's CPU time (its idle rate taken out) and each kind's event→reconcile p99 of the same probe instances, suspended modules at the largest N against the smallest".to_owned();
    let target =
        format!("≤ {GROWTH_ALLOWED}× (proportional to the modules an event concerns, not to N)");
    let Some((small, large)) = extremes(m) else {
        return Goal {
            goal,
            target,
            measured: "not measured: fewer than two sizes launched (--suspended-scale-n)".into(),
            holds: None,
        };
    };
    let Some((kind, p99_small, p99_large)) = worst_kind(small, large) else {
        return Goal {
            goal,
            target,
            measured: "not measured: no probe kind answered at both sizes".into(),
            holds: None,
        };
    };
    let holds = large.cpu_ms_per_event <= GROWTH_ALLOWED * small.cpu_ms_per_event
        && p99_large <= GROWTH_ALLOWED * p99_small;
    Goal {
        goal,
        target,
        measured: format!(
            "N = {} vs {}: CPU {:.2} vs {:.2} ms per event; p99 of the kind that grew most ({kind}) {:.1} vs {:.1} ms",
            large.n, small.n, large.cpu_ms_per_event, small.cpu_ms_per_event, p99_large, p99_small
        ),
        holds: Some(holds),
    }
}

/// The section: one row per launch.
pub(super) fn section(m: &Measured) -> String {
    let mut s = String::from("\n### Suspended modules by the thousand\n\n");
    if m.suspended_scale.is_empty() {
        s.push_str("Not run (`--suspended-scale-n`).\n");
        return s;
    }
    s.push_str(
        "N modules of the mixed kinds, round-robin, each in its own namespace, in one host that suspends idle modules. *Running*: the host's start until it reports every module; *settled*: until the count of suspended modules holds still 20 s (a module with a timer sooner than `idleAfter` stays resident, or is resumed ahead of each timer). Memory once settled; per module, the host's whole PSS over N. *Idle CPU*: the host's over 10 s left alone once settled (the modules' timers). The probes (the first instances of the five examples) get one change each per cycle; CPU per event is the host's over those cycles less the idle rate, per change; the p99 is store-reader's one-second tick where it answers.\n\n| N | kinds | running, s | settled, s | suspended | PSS, MiB | anonymous, MiB | PSS per module, KiB | snapshots, MiB | upstream watches | idle CPU, ms/s | probes × cycles | probe p50 / p99, ms | host CPU per event, ms |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut launches: Vec<&SuspendedScale> = m.suspended_scale.iter().collect();
    launches.sort_by_key(|l| l.n);
    for l in launches {
        let mib = |kib: u64| kib as f64 / 1024.0;
        let latencies = l.latencies();
        let pct = |p: f64| stats::percentile(&latencies, p).unwrap_or(f64::NAN);
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} | {:.1} | {} | {:.1} | {:.1} | {:.0} | {:.1} | {} | {:.1} | {} × {} | {:.1} / {:.1} | {:.2} |",
            l.n,
            l.kinds,
            l.running_secs,
            l.suspended_secs,
            l.suspended,
            mib(l.idle.pss_kib),
            mib(l.idle.pss_anon_kib),
            l.idle.pss_kib as f64 / l.n.max(1) as f64,
            l.snapshot_bytes as f64 / (1024.0 * 1024.0),
            l.upstream_watches,
            l.idle_cpu_ms_per_sec,
            l.probes,
            latencies.len() / l.probes.max(1),
            pct(50.0),
            pct(99.0),
            l.cpu_ms_per_event
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Sample;

    /// A launch whose probes are one mirror and one store-reader with these latencies.
    fn launch(n: usize, cpu_ms_per_event: f64, latency_ms: Vec<f64>) -> SuspendedScale {
        SuspendedScale {
            n,
            kinds: 18,
            running_secs: 10.0,
            suspended_secs: 30.0,
            suspended: n as u64,
            idle: Sample {
                pss_kib: n as u64 * 100,
                rss_kib: n as u64 * 120,
                pss_anon_kib: n as u64 * 60,
            },
            snapshot_bytes: n as u64 * 100_000,
            upstream_watches: n as u64,
            idle_cpu_ms_per_sec: 3.0,
            probes: 2,
            latency_by_kind_ms: [
                ("configmap-mirror".to_owned(), vec![latency_ms[0]]),
                ("store-reader".to_owned(), vec![latency_ms[1]]),
            ]
            .into(),
            cpu_ms_per_event,
        }
    }

    fn judged(launches: Vec<SuspendedScale>) -> Option<bool> {
        goal(&Measured {
            suspended_scale: launches,
            ..Measured::default()
        })
        .holds
    }

    #[test]
    fn per_event_cost_may_not_grow_with_n() {
        assert_eq!(judged(vec![]), None);
        assert_eq!(judged(vec![launch(100, 1.0, vec![5.0, 6.0])]), None);
        let small = || launch(100, 1.0, vec![5.0, 6.0]);
        assert_eq!(
            judged(vec![small(), launch(10_000, 1.9, vec![8.0, 11.0])]),
            Some(true)
        );
        // CPU per event three times the small fleet's.
        assert_eq!(
            judged(vec![small(), launch(10_000, 3.0, vec![5.0, 6.0])]),
            Some(false)
        );
        // One kind's p99 three times.
        assert_eq!(
            judged(vec![launch(10_000, 1.0, vec![5.0, 18.0]), small()]),
            Some(false)
        );
        // Judged kind by kind: the mirror three times slower hides under store-reader's tick
        // in a p99 over every kind.
        let ticking = |n, mirror| launch(n, 1.0, vec![mirror, 600.0]);
        assert_eq!(
            judged(vec![ticking(100, 5.0), ticking(10_000, 15.0)]),
            Some(false)
        );
        assert_eq!(
            judged(vec![ticking(100, 5.0), ticking(10_000, 9.0)]),
            Some(true)
        );
    }

    #[test]
    fn the_section_has_a_row_per_launch_smallest_first() {
        let m = Measured {
            suspended_scale: vec![
                launch(10_000, 1.5, vec![7.0, 9.0]),
                launch(100, 1.0, vec![5.0, 6.0]),
            ],
            ..Measured::default()
        };
        let text = section(&m);
        let small = text.find("| 100 | 18 |").expect("the row of N = 100");
        let large = text.find("| 10000 | 18 |").expect("the row of N = 10,000");
        assert!(small < large);
        assert!(text.contains("| 10000 | 3.0 | 2 × 1 | 7.0 / 9.0 | 1.50 |"));
    }
}
