//! Suspend to disk: idle modules are snapshotted and dropped, and the next completion
//! restores them with their memory, their globals (exported or not) and their pending ops.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::{
    Guest, Reply, Run, cache_dir, call_with_frame, fake_client, host_metric, idle_upstream,
    test_settings,
};
use host_shim::runtime::module::EndReason;
use host_shim::runtime::suspend::pressure::{CgroupMemory, PressureSource};
use host_shim::runtime::suspend::{CHUNK, SuspendPolicy, Suspendable};
use host_shim::{
    Host, ModuleError, ModuleOptions, ModuleOutcome, Settings, StopHandle, Supervisor, Upstream,
};
use kube_wasm_abi::{WatchRequest, encode_frame};

const IDLE: Duration = Duration::from_millis(50);

/// Runs `guests` (name, wasm) with `suspend: {idleAfter: IDLE}` on one host whose snapshots go
/// under `dir` and whose compiled modules come from a cache folder of its own (as by
/// default), so that they are dropped while no instance holds them; `control` gets the stop
/// handle and the host. Returns the run and the host.
async fn run_suspending(
    upstream: Upstream,
    dir: &Path,
    guests: &[(&str, Vec<u8>)],
    control: impl FnOnce(StopHandle, Host) + Send + 'static,
) -> (Run, Host) {
    // Timers alone decide: the tests' periods are shorter than the default cost factor lets
    // a module be suspended for.
    let policy = SuspendPolicy::after(IDLE).cost_factor(0);
    run_suspending_with(policy, upstream, dir, guests, control).await
}

/// [`run_suspending`] with another suspend policy.
async fn run_suspending_with(
    policy: SuspendPolicy,
    upstream: Upstream,
    dir: &Path,
    guests: &[(&str, Vec<u8>)],
    control: impl FnOnce(StopHandle, Host) + Send + 'static,
) -> (Run, Host) {
    run_suspending_in(policy, PressureSource::Off, upstream, dir, guests, control).await
}

/// [`run_suspending_with`] on a host that watches `pressure`.
async fn run_suspending_in(
    policy: SuspendPolicy,
    pressure: PressureSource,
    upstream: Upstream,
    dir: &Path,
    guests: &[(&str, Vec<u8>)],
    control: impl FnOnce(StopHandle, Host) + Send + 'static,
) -> (Run, Host) {
    let (settings, buffer) = test_settings();
    let cache = cache_dir();
    let settings = Settings {
        suspend_dir: Some(dir.to_owned()),
        cache_dir: Some(cache.path().to_owned()),
        memory_pressure: pressure,
        ..settings
    };
    let host = Host::new(upstream, settings).expect("host");
    let modules = guests
        .iter()
        .map(|(name, wasm)| {
            host.load_bytes(name, wasm)
                .expect("compiles")
                .with_options(ModuleOptions {
                    suspend: Some(policy),
                    ..ModuleOptions::default()
                })
        })
        .collect();
    let supervisor = Supervisor::new(host.clone(), Duration::from_secs(5));
    control(supervisor.stop_handle(), host.clone());
    let reports = tokio::time::timeout(Duration::from_secs(30), supervisor.run_all(modules))
        .await
        .expect("modules end within 30 s");
    let output = String::from_utf8_lossy(&buffer.lock().expect("output")).into_owned();
    (Run { reports, output }, host)
}

/// The value of the series `metric{module="name"}` in the host's metrics, 0 if absent.
fn metric(host: &Host, metric: &str, module: &str) -> u64 {
    let prefix = format!("{metric}{{module=\"{module}\"}} ");
    host.metrics()
        .encode()
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
        .map_or(0, |v| v.parse::<f64>().expect("a number") as u64)
}

/// Snapshot files anywhere under `dir`.
fn snapshot_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(snapshot_files(&path));
        } else if path.extension().is_some_and(|e| e == "snapshot") {
            found.push(path);
        }
    }
    found
}

/// A guest keeping state where a snapshot must carry it: an unexported mutable global
/// (`$counter`, like Rust's `__stack_pointer`; the prelude's `$finals` is one too), a data
/// segment it overwrote (`BBBB` over `AAAA`), one it zeroed (page 2, so the snapshot skips
/// that chunk and the restore must clear the fresh instance's `CCCC`), and a page it grew.
/// Each `delay` completion prints that state and asks for the next, three times.
fn keeper() -> Vec<u8> {
    let start = r#"
        (global.set $counter (i32.const 40))
        (i32.store (i32.const 4096) (i32.const 0x42424242))
        (i32.store (i32.const 131072) (i32.const 0))
        (drop (memory.grow (i32.const 2)))
        (i32.store (i32.const 327680) (i32.const 77))
        (drop (call $delay (i64.const 300)))
    "#;
    let complete = r#"
        (call $println_num (i64.extend_i32_u (global.get $counter)))
        (call $write (i32.const 4096) (i32.const 4))
        (call $newline)
        (call $println_num (i64.extend_i32_u (i32.load (i32.const 131072))))
        (call $println_num (i64.extend_i32_u (memory.size)))
        (call $println_num (i64.extend_i32_u (i32.load (i32.const 327680))))
        (global.set $counter (i32.add (global.get $counter) (i32.const 1)))
        (if (i32.lt_u (global.get $counter) (i32.const 43))
          (then (drop (call $delay (i64.const 300)))))
        (call $record (local.get $op) (local.get $ptr) (local.get $len))
    "#;
    let mut guest = Guest::new(start).complete(complete).expect_finals(3);
    guest.extra.push_str(
        r#"(global $counter (mut i32) (i32.const 0))
           (data (i32.const 4096) "AAAA")
           (data (i32.const 131072) "CCCC")"#,
    );
    guest.wasm()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_globals_and_pending_delays_survive_suspends() {
    let dir = tempfile::tempdir().expect("dir");
    let wasm = keeper();
    let (run, host) = run_suspending(
        idle_upstream(),
        dir.path(),
        &[("keeper", wasm.clone())],
        |_, _| {},
    )
    .await;
    assert_eq!(run.outcome("keeper"), &ModuleOutcome::Exited(0));
    let mut want = Vec::new();
    for (i, counter) in (40..43).enumerate() {
        want.extend([
            counter.to_string(),
            "BBBB".into(),
            "0".into(),
            "6".into(),
            "77".into(),
            format!(r#"{}:{{"kind":"elapsed"}}"#, i + 1),
        ]);
    }
    assert_eq!(run.lines_of("keeper"), want);
    // Suspended after `_start` and after each of the first two completions, resumed by each
    // delay; the last completion exits while resident.
    assert_eq!(
        metric(&host, "kube_wasm_module_suspends_total", "keeper"),
        3
    );
    assert_eq!(metric(&host, "kube_wasm_module_resumes_total", "keeper"), 3);
    assert_eq!(
        metric(&host, "kube_wasm_module_suspend_failures_total", "keeper"),
        0
    );
    // Its only instance let the compiled module go at each suspend, and at its end: it was
    // mapped again from its cache file at each resume.
    let compiled = host.load_bytes("keeper", &wasm).expect("known");
    assert_eq!(compiled.module_loads(), 3);
    assert!(!compiled.is_mapped(), "no instance holds it any more");
    assert!(
        snapshot_files(dir.path()).is_empty(),
        "snapshots are removed at resume"
    );
    drop(host);
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("dir").count(),
        0,
        "the host's snapshot folder goes with the host"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_holds_the_chunks_changed_since_instantiation_and_no_memory_stays() {
    let dir = tempfile::tempdir().expect("dir");
    let guest = Guest::new(
        "(drop (memory.grow (i32.const 60))) (i32.store8 (i32.const 200000) (i32.const 1)) \
         (drop (call $delay (i64.const 400)))",
    );
    let (seen_tx, seen_rx) = tokio::sync::oneshot::channel();
    let (run, host) = run_suspending(
        idle_upstream(),
        dir.path(),
        &[("big", guest.wasm())],
        |_, host| {
            tokio::spawn(async move {
                loop {
                    let state = host.metrics().encode().lines().any(|l| {
                        l == r#"kube_wasm_module_state{module="big",state="suspended"} 1"#
                    });
                    if state {
                        let seen = (
                            metric(&host, "kube_wasm_module_memory_bytes", "big"),
                            metric(&host, "kube_wasm_module_snapshot_bytes", "big"),
                            snapshot_files(host.settings().suspend_dir.as_deref().expect("set")),
                        );
                        let _ = seen_tx.send(seen);
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            });
        },
    )
    .await;
    assert_eq!(run.outcome("big"), &ModuleOutcome::Exited(0));
    let (memory, snapshot, files) = seen_rx.await.expect("it was suspended");
    assert_eq!(memory, 0, "no linear memory while suspended");
    assert_eq!(files.len(), 1, "one snapshot file: {files:?}");
    let name = files[0]
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("big-"), "named after the module: {name}");
    // 64 wasm pages of memory, of which two chunks are not zero: the prelude's data, as
    // instantiation left it, and the one `_start` wrote to.
    assert_eq!(
        snapshot,
        16 + 8 + CHUNK as u64,
        "only the chunk written since instantiation is in the snapshot"
    );
    assert_eq!(metric(&host, "kube_wasm_module_resumes_total", "big"), 1);
}

fn watch_frame() -> Vec<u8> {
    let request = WatchRequest {
        path: "/api/v1/pods".into(),
        label_selector: None,
        field_selector: None,
        timeout_seconds: None,
        bookmarks: false,
        send_initial_events: false,
        resource_version: "1".into(),
        metadata_only: false,
    };
    encode_frame(&request, b"")
}

/// A watch answer: an ADDED event at once, a MODIFIED one `later`, then the end.
fn two_events(later: Duration) -> Reply {
    let mut reply = Reply::new(200, vec![Ok(b"{\"type\":\"ADDED\",\"n\":1}\n".to_vec())]);
    reply.later = vec![(later, b"{\"type\":\"MODIFIED\",\"n\":2}\n".to_vec())];
    reply
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_event_arriving_while_suspended_resumes_the_module() {
    let dir = tempfile::tempdir().expect("dir");
    let (client, _) = fake_client(|_| two_events(Duration::from_millis(500)));
    let frame = watch_frame();
    let guest = Guest::new(&format!("(drop {})", call_with_frame("watch", &frame))).frame(&frame);
    let (run, host) = run_suspending(
        Upstream::new(client, "https://fake.invalid"),
        dir.path(),
        &[("watcher", guest.wasm())],
        |_, _| {},
    )
    .await;
    assert_eq!(run.outcome("watcher"), &ModuleOutcome::Exited(0));
    let lines = run.lines_of("watcher");
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(
        lines[0].starts_with(r#"1:{"kind":"head","status":200"#),
        "{lines:?}"
    );
    assert_eq!(
        lines[1..],
        [
            r#"1:{"kind":"watch_event"}{"type":"ADDED","n":1}"#,
            r#"1:{"kind":"watch_event"}{"type":"MODIFIED","n":2}"#,
            r#"1:{"kind":"end"}"#,
        ]
    );
    let suspends = metric(&host, "kube_wasm_module_suspends_total", "watcher");
    assert!(suspends >= 1, "suspended while the watch was quiet");
    assert_eq!(
        metric(&host, "kube_wasm_module_resumes_total", "watcher"),
        suspends,
        "every suspend was followed by a resume"
    );
}

/// Writes a cgroup v2 folder at `dir` whose working set is `percent` % of its 100 MiB limit.
fn fill_cgroup(dir: &Path, percent: u64) {
    std::fs::create_dir_all(dir).expect("dir");
    for (name, text) in [
        ("memory.current", (percent << 20).to_string()),
        ("memory.max", (100u64 << 20).to_string()),
        ("memory.stat", "inactive_file 0\n".to_owned()),
    ] {
        std::fs::write(dir.join(name), text).expect("write");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_memory_pressure_an_idle_module_is_suspended_at_once_and_resumed_by_its_next_event() {
    // A watcher whose next event comes after 1.5 s, with an idle threshold of a minute: only
    // memory pressure suspends it within the test.
    let frame = watch_frame();
    let guest = Guest::new(&format!("(drop {})", call_with_frame("watch", &frame))).frame(&frame);
    let policy = SuspendPolicy::after(Duration::from_secs(60));
    for pressed in [false, true] {
        let dir = tempfile::tempdir().expect("dir");
        let cgroup = dir.path().join("cgroup");
        fill_cgroup(&cgroup, 50);
        let (client, _) = fake_client(|_| two_events(Duration::from_millis(1500)));
        let filled = cgroup.clone();
        let snapshots = dir.path().join("snapshots");
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen_by_control = seen.clone();
        let looked_in = snapshots.clone();
        let (run, host) = run_suspending_in(
            policy,
            PressureSource::Cgroup(CgroupMemory::V2(cgroup)),
            Upstream::new(client, "https://fake.invalid"),
            &snapshots,
            &[("watcher", guest.wasm())],
            move |_, _| {
                // The cgroup fills once the module is idle: the change itself suspends it,
                // before its next event.
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    fill_cgroup(&filled, if pressed { 95 } else { 75 });
                    tokio::time::sleep(Duration::from_millis(700)).await;
                    let suspended = !snapshot_files(&looked_in).is_empty();
                    seen_by_control.store(suspended, std::sync::atomic::Ordering::SeqCst);
                });
            },
        )
        .await;
        let suspended_before_the_event = seen.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(suspended_before_the_event, pressed);
        assert_eq!(run.outcome("watcher"), &ModuleOutcome::Exited(0));
        assert_eq!(run.lines_of("watcher").len(), 4, "every event delivered");
        let suspends = metric(&host, "kube_wasm_module_suspends_total", "watcher");
        let resumes = metric(&host, "kube_wasm_module_resumes_total", "watcher");
        if pressed {
            assert!(suspends >= 1, "suspended at once under pressure");
            assert_eq!(resumes, suspends, "each resumed by the next event");
            assert!(
                host.metrics()
                    .encode()
                    .contains("kube_wasm_memory_pressure 1")
            );
        } else {
            assert_eq!(
                (suspends, resumes),
                (0, 0),
                "75 % of the limit is no pressure"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_memory_pressure_a_module_waiting_for_a_late_answer_is_suspended_and_resumed_by_it() {
    // A GET whose answer comes 1.5 s late, with an idle threshold of a minute: only memory
    // pressure suspends the module while it waits.
    let frame = encode_frame(&common::get("/api/v1/namespaces/a/configmaps/late"), b"");
    let guest = Guest::new(&format!(
        "(drop {})",
        call_with_frame("http_request", &frame)
    ))
    .frame(&frame);
    let policy = SuspendPolicy::after(Duration::from_secs(60));
    for pressed in [false, true] {
        let dir = tempfile::tempdir().expect("dir");
        let cgroup = dir.path().join("cgroup");
        fill_cgroup(&cgroup, if pressed { 95 } else { 50 });
        let (client, _) = fake_client(|_| {
            let mut reply = Reply::new(200, vec![Ok(b"{\"kind\":".to_vec())]);
            reply.later = vec![(Duration::from_millis(1500), b"\"ConfigMap\"}".to_vec())];
            reply
        });
        let (run, host) = run_suspending_in(
            policy,
            PressureSource::Cgroup(CgroupMemory::V2(cgroup)),
            Upstream::new(client, "https://fake.invalid"),
            &dir.path().join("snapshots"),
            &[("asker", guest.wasm())],
            |_, _| {},
        )
        .await;
        assert_eq!(run.outcome("asker"), &ModuleOutcome::Exited(0));
        assert_eq!(
            run.lines_of("asker"),
            [
                r#"1:{"kind":"response","status":200,"headers":[["content-type","application/json"]]}{"kind":"ConfigMap"}"#
            ],
            "the whole answer delivered"
        );
        let suspends = metric(&host, "kube_wasm_module_suspends_total", "asker");
        let resumes = metric(&host, "kube_wasm_module_resumes_total", "asker");
        if pressed {
            assert_eq!(
                (suspends, resumes),
                (1, 1),
                "suspended once the answer was late, resumed by it"
            );
        } else {
            assert_eq!((suspends, resumes), (0, 0), "resident while it waits");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_after_a_suspend_under_pressure_leaves_the_idle_threshold_as_it_was() {
    // Under pressure from the start the watcher is suspended at once after its first event
    // (twice if the watch's head and first event reach it apart, as on a busy machine: the
    // suspends are counted at 0.45 s); the pressure ends, and its second event (0.6 s)
    // resumes it sooner than its idle period (1 s). Had that resume doubled its threshold
    // (2 s), it would still be resident at its third event (2.1 s); it is suspended 1 s after
    // the second, and the third resumes it: one suspend more after 0.45 s.
    let frame = watch_frame();
    let guest = Guest::new(&format!("(drop {})", call_with_frame("watch", &frame))).frame(&frame);
    let dir = tempfile::tempdir().expect("dir");
    let cgroup = dir.path().join("cgroup");
    fill_cgroup(&cgroup, 95);
    let (client, _) = fake_client(|_| {
        let mut reply = Reply::new(200, vec![Ok(b"{\"type\":\"ADDED\",\"n\":1}\n".to_vec())]);
        reply.later = vec![
            (
                Duration::from_millis(600),
                b"{\"type\":\"MODIFIED\",\"n\":2}\n".to_vec(),
            ),
            (
                Duration::from_millis(1500),
                b"{\"type\":\"MODIFIED\",\"n\":3}\n".to_vec(),
            ),
        ];
        reply
    });
    let eased = cgroup.clone();
    let before_second = Arc::new(AtomicU64::new(0));
    let counted = before_second.clone();
    let (run, host) = run_suspending_in(
        SuspendPolicy::after(Duration::from_secs(1)),
        PressureSource::Cgroup(CgroupMemory::V2(cgroup)),
        Upstream::new(client, "https://fake.invalid"),
        &dir.path().join("snapshots"),
        &[("watcher", guest.wasm())],
        move |_, host| {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                fill_cgroup(&eased, 50);
                tokio::time::sleep(Duration::from_millis(250)).await;
                let suspends = metric(&host, "kube_wasm_module_suspends_total", "watcher");
                counted.store(suspends, Ordering::SeqCst);
            });
        },
    )
    .await;
    assert_eq!(run.outcome("watcher"), &ModuleOutcome::Exited(0));
    assert_eq!(run.lines_of("watcher").len(), 5, "every event delivered");
    let before_second = before_second.load(Ordering::SeqCst);
    assert!(
        before_second >= 1,
        "suspended under pressure before the second event"
    );
    assert_eq!(
        (
            metric(&host, "kube_wasm_module_suspends_total", "watcher"),
            metric(&host, "kube_wasm_module_resumes_total", "watcher"),
        ),
        (before_second + 1, before_second + 1),
        "suspended under pressure, then after its idle period, resumed each time"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_request_resumes_a_suspended_module_that_asked_for_it() {
    let dir = tempfile::tempdir().expect("dir");
    let (run, host) = run_suspending(
        idle_upstream(),
        dir.path(),
        &[("polite", Guest::new("(drop (call $stop_signal))").wasm())],
        |stop, host| {
            tokio::spawn(async move {
                while metric(&host, "kube_wasm_module_suspends_total", "polite") == 0 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                stop.request_stop();
            });
        },
    )
    .await;
    assert_eq!(run.outcome("polite"), &ModuleOutcome::Exited(0));
    assert_eq!(run.lines_of("polite"), [r#"1:{"kind":"stop"}"#]);
    assert_eq!(metric(&host, "kube_wasm_module_resumes_total", "polite"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_module_that_never_asked_for_stop_ends_without_resuming() {
    let dir = tempfile::tempdir().expect("dir");
    let (run, host) = run_suspending(
        idle_upstream(),
        dir.path(),
        &[(
            "deaf",
            Guest::new("(drop (call $delay (i64.const 60000)))").wasm(),
        )],
        |stop, host| {
            tokio::spawn(async move {
                while metric(&host, "kube_wasm_module_suspends_total", "deaf") == 0 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                stop.request_stop();
            });
        },
    )
    .await;
    assert_eq!(
        run.outcome("deaf"),
        &ModuleOutcome::Ended(EndReason::NeverAskedForStop)
    );
    assert_eq!(metric(&host, "kube_wasm_module_resumes_total", "deaf"), 0);
    assert_eq!(metric(&host, "kube_wasm_module_snapshot_bytes", "deaf"), 0);
    assert!(
        snapshot_files(dir.path()).is_empty(),
        "the snapshot of an ended module is removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_cannot_be_written_leaves_the_module_resident() {
    let file = tempfile::NamedTempFile::new().expect("file");
    // A regular file where the snapshot folder should be.
    let wasm = Guest::new("(drop (call $delay (i64.const 300)))").wasm();
    let (run, host) =
        run_suspending(idle_upstream(), file.path(), &[("stuck", wasm)], |_, _| {}).await;
    assert_eq!(run.outcome("stuck"), &ModuleOutcome::Exited(0));
    assert_eq!(run.lines_of("stuck"), [r#"1:{"kind":"elapsed"}"#]);
    assert_eq!(metric(&host, "kube_wasm_module_suspends_total", "stuck"), 0);
    assert!(metric(&host, "kube_wasm_module_suspend_failures_total", "stuck") >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_altered_on_disk_ends_the_module_with_a_resume_error() {
    let dir = tempfile::tempdir().expect("dir");
    let base = dir.path().to_owned();
    // A chunk written since instantiation, whose last byte is the file's.
    let wasm = Guest::new(
        "(i32.store (i32.const 70000) (i32.const 5)) (drop (call $delay (i64.const 600)))",
    )
    .wasm();
    let (run, _host) = run_suspending(
        idle_upstream(),
        dir.path(),
        &[("victim", wasm)],
        move |_, _| {
            tokio::spawn(async move {
                loop {
                    if let Some(path) = snapshot_files(&base).first() {
                        let mut bytes = std::fs::read(path).expect("readable");
                        let last = bytes.len() - 1;
                        bytes[last] ^= 0xff;
                        std::fs::write(path, bytes).expect("writable");
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            });
        },
    )
    .await;
    match run.outcome("victim") {
        ModuleOutcome::Failed(ModuleError::Resume(why)) => {
            assert!(why.contains("checksum"), "{why}");
        }
        other => panic!("expected a resume error, got {other:?}"),
    }
    assert!(snapshot_files(dir.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_that_changes_its_tables_is_never_suspended() {
    let dir = tempfile::tempdir().expect("dir");
    let mut guest = Guest::new("(drop (call $delay (i64.const 300)))");
    guest.extra.push_str(
        "(table $t 1 funcref) (func $grow (drop (table.grow $t (ref.null func) (i32.const 1))))",
    );
    let wasm = guest.wasm();
    let (settings, _) = test_settings();
    let host = Host::new(idle_upstream(), settings).expect("host");
    match host
        .load_bytes("tables", &wasm)
        .expect("compiles")
        .suspendable()
    {
        Suspendable::No(why) => assert!(why.contains("table.grow"), "{why}"),
        Suspendable::Yes(_) => panic!("a module growing its table is not suspendable"),
    }
    let (run, host) =
        run_suspending(idle_upstream(), dir.path(), &[("tables", wasm)], |_, _| {}).await;
    assert_eq!(run.outcome("tables"), &ModuleOutcome::Exited(0));
    assert_eq!(run.lines_of("tables"), [r#"1:{"kind":"elapsed"}"#]);
    assert_eq!(
        metric(&host, "kube_wasm_module_suspends_total", "tables"),
        0
    );
}

/// A requeue-driven guest: a timer of `period_ms`, then another at each delivery, `ticks`
/// times; nothing else (no watch, no request).
fn ticker(period_ms: u64, ticks: u32) -> Vec<u8> {
    let start = format!("(drop (call $delay (i64.const {period_ms})))");
    let complete = format!(
        r#"
        (global.set $ticks (i32.add (global.get $ticks) (i32.const 1)))
        (if (i32.lt_u (global.get $ticks) (i32.const {ticks}))
          (then (drop (call $delay (i64.const {period_ms})))))
        (call $record (local.get $op) (local.get $ptr) (local.get $len))
    "#
    );
    let mut guest = Guest::new(&start).complete(&complete).expect_finals(ticks);
    guest
        .extra
        .push_str("(global $ticks (mut i32) (i32.const 0))");
    guest.wasm()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspends_within_a_second_share_one_heap_trim() {
    // A trim walks the host's whole heap, which grows with its modules: one a suspend made
    // an event's CPU time grow with the number of modules. Six tickers are suspended after
    // each of their first three ticks, at about the same moments; the trims of the whole
    // process (other tests' hosts included) stay at one a second.
    let names = ["t0", "t1", "t2", "t3", "t4", "t5"];
    let guests: Vec<(&str, Vec<u8>)> = names.iter().map(|n| (*n, ticker(400, 4))).collect();
    let dir = tempfile::tempdir().expect("dir");
    let trims_before = host_shim::heap::trims();
    let started = std::time::Instant::now();
    let (run, host) = run_suspending(idle_upstream(), dir.path(), &guests, |_, _| {}).await;
    // A trim asked for by the last suspend runs up to a second later.
    tokio::time::sleep(host_shim::heap::TRIM_DELAY * 2).await;
    let secs = started.elapsed().as_secs_f64();
    let trims = host_shim::heap::trims() - trims_before;
    let mut suspends = 0;
    for name in names {
        assert_eq!(run.outcome(name), &ModuleOutcome::Exited(0));
        suspends += metric(&host, "kube_wasm_module_suspends_total", name);
    }
    assert!(
        suspends >= 12,
        "each ticker suspended between ticks: {suspends}"
    );
    assert!(trims >= 1, "the freed instances were trimmed");
    assert!(
        (trims as f64) <= secs.ceil() + 1.0,
        "{trims} trims in {secs:.1} s for {suspends} suspends"
    );
}

/// Runs [`ticker`]`(period_ms, ticks)` alone with `policy`, asserts that it ticked every time
/// and exited, and returns the host.
async fn run_ticker(policy: SuspendPolicy, period_ms: u64, ticks: u32) -> Host {
    let dir = tempfile::tempdir().expect("dir");
    let (run, host) = run_suspending_with(
        policy,
        idle_upstream(),
        dir.path(),
        &[("ticker", ticker(period_ms, ticks))],
        |_, _| {},
    )
    .await;
    assert_eq!(run.outcome("ticker"), &ModuleOutcome::Exited(0));
    assert_eq!(run.lines_of("ticker").len(), ticks as usize, "every tick");
    host
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeue_driven_module_is_suspended_between_its_timers_and_resumed_ahead_of_them() {
    // Ticks every 800 ms, shorter than its 1 s idle threshold: counted from its last entry,
    // as before, it would never be idle. Timers are foreseen, so from 1 s after its start (its
    // last unforeseen wake-up) it is suspended after each tick whose next one is at least
    // 500 ms away, and resumed just ahead of it.
    let ticks = 7;
    let policy = SuspendPolicy::after(Duration::from_secs(1)).cost_factor(0);
    let host = run_ticker(policy, 800, ticks).await;
    let suspends = metric(&host, "kube_wasm_module_suspends_total", "ticker");
    let resumes = metric(&host, "kube_wasm_module_resumes_total", "ticker");
    // Suspended at 1 s (before the tick at 1.6 s) and after the ticks at 1.6 … 4.8 s: 6. Had
    // its planned resumes stretched its threshold (1, 2, 4, 8 s), only 3.
    assert!(
        suspends >= 5,
        "suspended between its ticks: {suspends} times"
    );
    assert_eq!(resumes, suspends, "every suspend was resumed for a tick");
    let ahead = host_metric(&host, "kube_wasm_timer_resumes_total");
    assert!(
        ahead >= resumes as f64 / 2.0,
        "resumed ahead of its timer: {ahead} of {resumes} resumes"
    );
    assert_eq!(
        host_metric(&host, "kube_wasm_timer_lateness_seconds_count"),
        f64::from(ticks),
        "each tick's lateness observed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticker_stays_resident_once_a_suspend_and_a_resume_cost_more_than_its_period_allows() {
    // The 800 ms ticker above, suspended between timers only if the next is 100,000 round
    // trips away: its first suspend comes before anything was measured; any
    // suspend and resume take more than 10 µs, so after that its ticks are too near.
    let policy = SuspendPolicy::after(Duration::from_secs(1)).cost_factor(100_000);
    let host = run_ticker(policy, 800, 5).await;
    assert_eq!(
        metric(&host, "kube_wasm_module_suspends_total", "ticker"),
        1
    );
    assert_eq!(metric(&host, "kube_wasm_module_resumes_total", "ticker"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_is_not_suspended_just_before_its_timer() {
    // Ticks every 300 ms: always within the 500 ms timer gap of its next tick, so never
    // suspended, though it is idle (counted from its start) after 1 s.
    let dir = tempfile::tempdir().expect("dir");
    let (run, host) = run_suspending_with(
        SuspendPolicy::after(Duration::from_secs(1)),
        idle_upstream(),
        dir.path(),
        &[("fast", ticker(300, 8))],
        |_, _| {},
    )
    .await;
    assert_eq!(run.outcome("fast"), &ModuleOutcome::Exited(0));
    assert_eq!(metric(&host, "kube_wasm_module_suspends_total", "fast"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_between_timers_off_each_tick_makes_the_module_busy() {
    // The ticker of the test above, with `betweenTimers: false`: each delivery restarts its
    // 1 s idle threshold, so an 800 ms ticker is never suspended.
    let dir = tempfile::tempdir().expect("dir");
    let (run, host) = run_suspending_with(
        SuspendPolicy::after(Duration::from_secs(1)).between_timers(false),
        idle_upstream(),
        dir.path(),
        &[("ticker", ticker(800, 5))],
        |_, _| {},
    )
    .await;
    assert_eq!(run.outcome("ticker"), &ModuleOutcome::Exited(0));
    assert_eq!(
        metric(&host, "kube_wasm_module_suspends_total", "ticker"),
        0
    );
    assert_eq!(host_metric(&host, "kube_wasm_timer_resumes_total"), 0.0);
}
