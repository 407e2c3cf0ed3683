//! Watching the host while the soak runs: its memory (PSS and RSS from
//! `/proc/PID/smaps_rollup`, see [`crate::memory`]) every few seconds, its modules' restart
//! counters from its metrics endpoint, and whether it ended by itself — a host that exits
//! without being killed is recorded and started again, so the soak goes on.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube_wasm_e2e::metrics::fetch;
use serde::Serialize;
use tokio::sync::watch;

use super::clock::Clock;
use super::host::Host;
use crate::memory;

/// The host's memory at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemorySample {
    /// The host incarnation (from 1).
    pub incarnation: usize,
    /// When (run seconds).
    pub at: f64,
    /// Seconds since that incarnation started.
    pub since_start: f64,
    /// Proportional set size, in KiB.
    pub pss_kib: u64,
    /// Resident set size, in KiB.
    pub rss_kib: u64,
}

/// What the sampler saw.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HostLog {
    /// Memory samples, in time order.
    pub samples: Vec<MemorySample>,
    /// Exits nobody asked for: `(run seconds, status)`.
    pub unexpected_exits: Vec<(f64, String)>,
    /// The last scrape of each incarnation's `kube_wasm_module_restarts_total`, per module.
    pub restarts: BTreeMap<usize, BTreeMap<String, u64>>,
}

/// Reads `kube_wasm_module_restarts_total{module="…"} N` series from a Prometheus text.
pub fn parse_restarts(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("kube_wasm_module_restarts_total{")?;
            let (labels, value) = rest.split_once("} ")?;
            let module = labels
                .split(',')
                .find_map(|l| l.strip_prefix("module=\""))?
                .trim_end_matches('"');
            Some((module.to_owned(), value.trim().parse::<f64>().ok()? as u64))
        })
        .collect()
}

/// `samples` as CSV: a header line, then `incarnation,at_s,since_start_s,pss_kib,rss_kib`
/// lines.
pub fn csv(samples: &[MemorySample]) -> String {
    let mut text = String::from("incarnation,at_s,since_start_s,pss_kib,rss_kib\n");
    for s in samples {
        text.push_str(&format!(
            "{},{:.1},{:.1},{},{}\n",
            s.incarnation, s.at, s.since_start, s.pss_kib, s.rss_kib
        ));
    }
    text
}

/// Samples `host` every `every` until `stop` is raised.
pub async fn sample(
    host: Arc<Mutex<Host>>,
    clock: Clock,
    every: Duration,
    metrics: SocketAddr,
    mut stop: watch::Receiver<bool>,
) -> HostLog {
    let mut log = HostLog::default();
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        let (pid, incarnation, started_at) = {
            let mut host = host.lock().unwrap_or_else(|e| e.into_inner());
            match host.exited() {
                Ok(Some(status)) => {
                    let at = clock.now();
                    eprintln!(
                        "soak: the host exited by itself at {at:.1} s: {status}; starting it again"
                    );
                    log.unexpected_exits.push((at, status.to_string()));
                    if let Err(err) = host.start(at) {
                        eprintln!("soak: starting the host again failed: {err:#}");
                    }
                    continue;
                }
                Ok(None) => {}
                Err(err) => eprintln!("soak: {err:#}"),
            }
            (host.pid(), host.incarnation(), host.started_at())
        };
        let Some(pid) = pid else { continue };
        let at = clock.now();
        if let Ok(m) = memory::of_process(pid) {
            log.samples.push(MemorySample {
                incarnation,
                at,
                since_start: at - started_at,
                pss_kib: m.pss_kib,
                rss_kib: m.rss_kib,
            });
        }
        let scraped = tokio::task::spawn_blocking(move || fetch(metrics)).await;
        if let Ok(Ok(text)) = scraped {
            log.restarts.insert(incarnation, parse_restarts(&text));
        }
    }
    log
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_restart_counters() {
        let text = "# HELP kube_wasm_module_restarts_total restarts\n\
            kube_wasm_module_restarts_total{module=\"mirror-0\"} 2\n\
            kube_wasm_module_restarts_total{module=\"hostile-1\"} 7\n\
            kube_wasm_module_entries_total{module=\"mirror-0\"} 9\n";
        let r = parse_restarts(text);
        assert_eq!(r.len(), 2);
        assert_eq!((r["mirror-0"], r["hostile-1"]), (2, 7));
    }

    #[test]
    fn memory_as_csv() {
        let s = MemorySample {
            incarnation: 2,
            at: 61.24,
            since_start: 1.0,
            pss_kib: 3,
            rss_kib: 4,
        };
        assert_eq!(
            csv(&[s]),
            "incarnation,at_s,since_start_s,pss_kib,rss_kib\n2,61.2,1.0,3,4\n"
        );
    }
}
