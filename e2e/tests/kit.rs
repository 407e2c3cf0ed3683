//! The test kit's own pieces, without a cluster. (A test target rather than unit tests in the
//! library, so `scripts/test.sh` runs them within the workspace's feature resolution.)

use kube_wasm_e2e::audit::{ByRequest, Tail};
use kube_wasm_e2e::manifest::{Entry, render};
use std::io::Write as _;

fn append(path: &std::path::Path, text: &str) {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .expect("append");
}

#[test]
fn the_tail_returns_whole_new_lines_across_a_rotation() {
    let dir = std::env::temp_dir().join(format!("kube-wasm-kit-tail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let log = dir.join("audit.log");
    std::fs::write(&log, "before\n").expect("write");
    let mut tail = Tail::at_end(log.clone()).expect("the log is readable");
    append(&log, "a\nb-torn");
    assert_eq!(tail.lines().expect("read"), ["a"]);
    append(&log, "-end\n");
    std::fs::rename(&log, dir.join("audit-2026-01-01T00-00-00.000.log")).expect("rotate");
    std::fs::write(&log, "c\n").expect("write");
    assert_eq!(tail.lines().expect("read"), ["b-torn-end", "c"]);
    std::fs::remove_dir_all(&dir).expect("cleaned up");
    assert!(
        tail.lines().is_err(),
        "an unreadable log is an error, not empty"
    );
}

#[test]
fn events_group_by_request_in_first_seen_order() {
    let mut grouped = ByRequest::default();
    for (id, stage) in [("b", "1"), ("a", "1"), ("b", "2")] {
        grouped.push(serde_json::json!({ "auditID": id, "stage": stage }));
    }
    assert_eq!((grouped.len(), grouped.events()), (2, 3));
    let ids: Vec<(&str, usize)> = grouped
        .requests()
        .map(|stages| {
            (
                stages[0]["auditID"].as_str().unwrap_or_default(),
                stages.len(),
            )
        })
        .collect();
    assert_eq!(ids, [("b", 2), ("a", 1)]);
}

#[test]
fn manifests_quote_values_and_list_env_last() {
    let entry = Entry::with_wasm("m", "/w/m.wasm".as_ref())
        .namespace("ns")
        .field("restartPolicy: Never")
        .env("K", "v");
    let text = render("cache", "sharedWatches: true", &[entry]);
    assert_eq!(
        text,
        "cacheDir: \"cache\"\nsharedWatches: true\nmodules:\n  - name: \"m\"\n    wasm: \
         \"/w/m.wasm\"\n    namespace: \"ns\"\n    restartPolicy: Never\n    env:\n      \"K\": \
         \"v\"\n"
    );
}

fn replica_line(event: &str, module: &str, replica: &str, at: u128) -> String {
    format!(
        "2026-11-25T10:00:00Z  INFO host_shim::fleet::operator::modules: module {event} on \
         this replica module={module} replica={replica} at_unix_us={at}"
    )
}

#[test]
fn replica_intervals_pair_starts_with_stops_and_overlaps_are_found() {
    use kube_wasm_e2e::replicas::{intervals, overlaps};
    let a = intervals(&[
        replica_line("started", "ns.m", "a", 10),
        replica_line("stopped", "ns.m", "a", 20),
        replica_line("started", "ns.n", "a", 5),
    ]);
    let b = intervals(&[
        replica_line("started", "ns.m", "b", 21),
        replica_line("started", "ns.n", "b", 7),
    ]);
    let mut all = a.clone();
    for (module, runs) in b {
        all.entry(module).or_default().extend(runs);
    }
    assert_eq!(all["ns.m"][0].stop_us, Some(20));
    let found = overlaps(&all, 100);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("ns.n"), "{found:?}");
}

#[test]
fn a_handoff_is_the_last_stop_on_one_replica_and_the_next_start_on_the_other() {
    use kube_wasm_e2e::replicas::{Interval, handoff, held_by};
    let run = |replica: &str, start_us, stop_us| Interval {
        replica: replica.into(),
        start_us,
        stop_us,
    };
    let runs = [
        run("b", 1, Some(5)),
        run("a", 6, Some(20)),
        run("b", 22, None),
        run("b", 30, None),
    ];
    assert_eq!(handoff(&runs, "a", "b"), Some((20, 22)));
    assert_eq!(handoff(&runs, "a", "c"), None, "never started on c");
    assert_eq!(handoff(&runs, "c", "b"), None, "never ran on c");
    let placed = [("ns1", "a"), ("ns2", "b"), ("ns3", "a")]
        .map(|(ns, host)| (ns.to_owned(), host.to_owned()))
        .into();
    assert_eq!(
        held_by(&placed, "a"),
        ["ns1", "ns3"].map(String::from).into()
    );
}
