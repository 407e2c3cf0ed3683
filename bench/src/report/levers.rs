//! The levers in the report: each fleet with every lever on (the host's defaults) against the
//! same fleet with one lever off, launch by launch.

use std::fmt::Write as _;

use super::measured::Measured;
use crate::levers::{Lever, LeverRun};

/// An event time in ms, `–` if none was timed.
fn ms(value: f64) -> String {
    if value.is_nan() {
        "–".into()
    } else {
        format!("{value:.1}")
    }
}

/// A launch's mean timer lateness in ms, `–` if no timer was delivered.
fn lateness(run: &LeverRun) -> String {
    if run.timers.delivered == 0 {
        "–".into()
    } else {
        format!("{:.1}", run.timers.mean_lateness_ms)
    }
}

/// The "Levers, before/after" section.
pub(super) fn section(m: &Measured) -> String {
    let mut s = String::from("\n## Levers, before/after\n\n");
    if m.levers.is_empty() {
        s.push_str("Not run (it needs the wasm variant; `--no-levers` skips it).\n");
        return s;
    }
    s.push_str(
        "Each fleet in one host with every lever on (the defaults), then with one lever off, \
         each in a launch of its own: idle memory after the settle time and the host's TCP \
         connections to the apiserver then; the next event (the first after the settle time, \
         code released) and the one right after it. Five examples: a ConfigMap until \
         configmap-mirror's Secret is seen by the driver; ring: one ring cycle. Suspended: \
         modules suspended at the idle sample; timers: over the settle time, how late timers \
         reached their modules on average (from falling due to delivery); CPU: the host's, over \
         the settle time. Tickers: store-readers woken every second, no event timed.\n\n\
         | fleet | lever | idle PSS off, MiB | idle PSS on, MiB | change | suspended off / on | CPU off / on, s | apiserver connections off / on | timers late off / on, ms | next event off / on, ms | event after off / on, ms |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut fleets: Vec<&str> = Vec::new();
    for run in &m.levers {
        if !fleets.contains(&run.fleet.as_str()) {
            fleets.push(&run.fleet);
        }
    }
    let of = |fleet: &str, off: Option<Lever>| -> Option<&LeverRun> {
        m.levers.iter().find(|r| r.fleet == fleet && r.off == off)
    };
    let mib = |kib: u64| kib as f64 / 1024.0;
    for fleet in fleets {
        let Some(on) = of(fleet, None) else {
            continue;
        };
        for lever in Lever::ALL {
            let Some(off) = of(fleet, Some(lever)) else {
                continue;
            };
            let change = (on.idle.pss_kib as f64 / off.idle.pss_kib.max(1) as f64 - 1.0) * 100.0;
            let _ = writeln!(
                s,
                "| {fleet} | `{}` | {:.1} | {:.1} | {change:+.0} % | {} / {} | {:.2} / {:.2} | {} / {} | {} / {} | {} / {} | {} / {} |",
                lever.setting(),
                mib(off.idle.pss_kib),
                mib(on.idle.pss_kib),
                off.suspended_modules,
                on.suspended_modules,
                off.cpu_seconds,
                on.cpu_seconds,
                off.apiserver_connections,
                on.apiserver_connections,
                lateness(off),
                lateness(on),
                ms(off.next_event_ms),
                ms(on.next_event_ms),
                ms(off.warm_event_ms),
                ms(on.warm_event_ms),
            );
        }
    }
    s
}
