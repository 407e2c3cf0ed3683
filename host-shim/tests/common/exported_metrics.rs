//! The metric families a host exports, read from its own registry: one value recorded in
//! every family, the registry encoded as the metrics endpoint serves it, and the families read
//! back with their type, help text, labels and series names. The book's reference page lists
//! them; the Grafana dashboard's queries may name nothing else.

use std::collections::BTreeSet;
use std::time::Duration;

use host_shim::metrics::{CacheTotals, Metrics, ModuleState};
use host_shim::upstream::http2::Http2Stats;

/// One metric family as the endpoint shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    /// The family's name (`kube_wasm_module_entries`).
    pub name: String,
    /// `counter`, `gauge` or `histogram`.
    pub kind: String,
    /// Its help text.
    pub help: String,
    /// The labels of its series, `le` left out.
    pub labels: BTreeSet<String>,
    /// The names its series are exported under (`…_total`; `…_bucket`, `…_sum`, `…_count`).
    pub series: BTreeSet<String>,
}

/// Every family of a host's metrics, in the order the endpoint lists them.
///
/// # Panics
/// If a family has no series: record a value in it here when adding one to the host.
pub fn exported() -> Vec<Family> {
    let metrics = Metrics::new();
    let took = Duration::from_millis(3);
    metrics.set_state("m", ModuleState::Running);
    metrics.set_memory("m", 1 << 20);
    metrics.count_entry("m");
    metrics.observe_op("m", "http", took);
    metrics.count_quota_refusal("m", "watches");
    metrics.count_log_line_dropped("m");
    metrics.count_restarts("m", 1);
    metrics.suspended("m", took, 4096);
    metrics.suspend_failed("m");
    metrics.resumed("m", Some(took));
    metrics.observe_timer_lateness(took);
    metrics.count_resume_ahead();
    let _watch = metrics.watch_opened();
    metrics.set_instance_slots(1);
    let _waiting = metrics.waiting_for_instance_slot();
    metrics.set_cache(1, 4096);
    metrics.set_watch_cache(&CacheTotals {
        informers: 1,
        subscribers: 2,
        objects: 3,
        events: 4,
        bytes: 5,
    });
    metrics.set_http2(Http2Stats {
        connections: 1,
        streams: 2,
    });
    let replica = metrics.replica();
    replica.set_owned(1);
    replica.count_handoff();
    replica.count_failover();
    replica.count_fence();
    replica.count_renew_failure();
    replica.observe_renew(took);
    parse(&metrics.encode())
}

fn parse(text: &str) -> Vec<Family> {
    let mut families: Vec<Family> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            families.push(Family {
                name: name.to_owned(),
                kind: String::new(),
                help: help.to_owned(),
                labels: BTreeSet::new(),
                series: BTreeSet::new(),
            });
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("`# TYPE name kind`");
            let family = families
                .iter_mut()
                .find(|f| f.name == name)
                .expect("HELP before TYPE");
            family.kind = kind.to_owned();
        } else if !line.starts_with('#') && !line.is_empty() {
            let name_end = line.find(['{', ' ']).expect("a sample");
            let series = &line[..name_end];
            let family = families
                .iter_mut()
                .filter(|f| {
                    series.strip_prefix(f.name.as_str()).is_some_and(|suffix| {
                        ["", "_total", "_bucket", "_sum", "_count", "_created"].contains(&suffix)
                    })
                })
                .max_by_key(|f| f.name.len())
                .unwrap_or_else(|| panic!("a sample of no family: {line}"));
            family.series.insert(series.to_owned());
            if let Some(labels) = line[name_end..]
                .strip_prefix('{')
                .and_then(|l| l.split_once('}'))
                .map(|(labels, _)| labels)
            {
                for pair in labels.split(',') {
                    let (label, _) = pair.split_once('=').expect("label=\"value\"");
                    if label != "le" {
                        family.labels.insert(label.to_owned());
                    }
                }
            }
        }
    }
    for family in &families {
        assert!(
            !family.series.is_empty(),
            "{} has no series: record a value in it in tests/common/exported_metrics.rs",
            family.name
        );
    }
    families
}
