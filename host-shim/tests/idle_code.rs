//! Idle code (`Settings::release_idle_code`): the compiled code of a module loaded from the
//! cache is released once no module of that wasm has run for the release time, and every
//! release time between the entries of a module woken more often than that, never while one
//! of them is inside a guest entry; the host binary's code once no module has run; and an
//! idle module's fiber stack and the dead pages of its shadow stack with its code.

mod common;

use std::time::Duration;

use common::{Guest, cache_dir, idle_upstream, test_settings};
use host_shim::{Host, ModuleOutcome, Settings, Supervisor};

const RELEASE_AFTER: Duration = Duration::from_millis(100);

/// One wasm for two modules: one whose name is longer than one character spins in `_start`
/// for 800 ms (reading the WASI clock) before it waits; every module then waits 500 ms for a
/// delay and exits when it completes.
fn guest() -> Vec<u8> {
    let start = r#"
        (local $t0 i64)
        (drop (call $args_sizes_get (i32.const 1024) (i32.const 1028)))
        (if (i32.gt_u (i32.load (i32.const 1028)) (i32.const 2))
          (then
            (drop (call $clock (i32.const 1) (i64.const 1) (i32.const 1040)))
            (local.set $t0 (i64.load (i32.const 1040)))
            (block $done
              (loop $spin
                (drop (call $clock (i32.const 1) (i64.const 1) (i32.const 1040)))
                (br_if $done (i64.gt_u (i64.sub (i64.load (i32.const 1040)) (local.get $t0))
                                       (i64.const 800000000)))
                (br $spin)))))
        (drop (call $delay (i64.const 500)))
    "#;
    Guest::new(start)
        .imports(
            r#"(import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
               (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))"#,
        )
        .wasm()
}

fn settings(cache: &std::path::Path) -> Settings {
    let (settings, _) = test_settings();
    Settings {
        cache_dir: Some(cache.to_owned()),
        release_idle_code: Some(RELEASE_AFTER),
        ..settings
    }
}

/// Runs `wasm` as the one module of a new host that releases idle code after
/// `release_idle_code`; returns the host and the module's outcome.
async fn run_alone(
    cache: &std::path::Path,
    release_idle_code: Option<Duration>,
    wasm: &[u8],
) -> (Host, ModuleOutcome) {
    let host = Host::new(
        idle_upstream(),
        Settings {
            release_idle_code,
            ..settings(cache)
        },
    )
    .expect("host");
    let module = host.load_bytes("a", wasm).expect("loads");
    let mut reports = Supervisor::new(host.clone(), Duration::from_secs(5))
        .run_all(vec![module])
        .await;
    let report = reports.pop().expect("one report");
    (host, report.outcome)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_is_released_when_no_module_of_it_runs_and_not_while_one_does() {
    let cache = cache_dir();
    let wasm = guest();
    // The first host compiles the module and stores it; the second maps the cache file.
    Host::new(idle_upstream(), settings(cache.path()))
        .expect("host")
        .load_bytes("warm", &wasm)
        .expect("compiles");
    let host = Host::new(idle_upstream(), settings(cache.path())).expect("host");
    assert!(
        cache.path().join("key").exists(),
        "the cache folder is used"
    );
    let idle = host.load_bytes("a", &wasm).expect("loads from the cache");
    let busy = host.load_bytes("busy", &wasm).expect("loads");
    assert!(idle.shares_code_with(&busy));

    let watched = idle.clone();
    let during_spin = tokio::spawn(async move {
        // `a` has waited past the release time since 100 ms; `busy` spins until 800 ms.
        tokio::time::sleep(Duration::from_millis(450)).await;
        watched.code_releases()
    });
    let supervisor = Supervisor::new(host.clone(), Duration::from_secs(5));
    let reports = tokio::time::timeout(
        Duration::from_secs(30),
        supervisor.run_all(vec![idle.clone(), busy]),
    )
    .await
    .expect("modules end within 30 s");
    for report in &reports {
        assert!(
            matches!(report.outcome, ModuleOutcome::Exited(0)),
            "{}: {:?}",
            report.name,
            report.outcome
        );
    }
    assert_eq!(
        during_spin.await.expect("watcher"),
        0,
        "released while `busy` was running the code"
    );
    assert!(
        idle.code_releases() >= 1,
        "released after `busy` spun and went idle"
    );
    assert!(
        host.host_code_releases() >= 1,
        "the host's code is released while no module runs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_of_a_module_woken_more_often_than_the_release_time_is_released_between_entries() {
    let cache = cache_dir();
    // A ticker: waits 30 ms, 20 times (a counter at byte 60000), then exits; never idle for
    // the 100 ms release time.
    let wasm = Guest::new("(drop (call $delay (i64.const 30)))")
        .complete(
            r#"(i32.store (i32.const 60000) (i32.add (i32.load (i32.const 60000)) (i32.const 1)))
               (if (i32.ge_u (i32.load (i32.const 60000)) (i32.const 20))
                 (then (call $proc_exit (i32.const 0))))
               (drop (call $delay (i64.const 30)))"#,
        )
        .wasm();
    Host::new(idle_upstream(), settings(cache.path()))
        .expect("host")
        .load_bytes("warm", &wasm)
        .expect("compiles");
    let host = Host::new(idle_upstream(), settings(cache.path())).expect("host");
    let ticker = host
        .load_bytes("ticker", &wasm)
        .expect("loads from the cache");
    let reports = tokio::time::timeout(
        Duration::from_secs(30),
        Supervisor::new(host.clone(), Duration::from_secs(5)).run_all(vec![ticker.clone()]),
    )
    .await
    .expect("the ticker ends within 30 s");
    assert!(
        matches!(reports[0].outcome, ModuleOutcome::Exited(0)),
        "{:?}",
        reports[0].outcome
    );
    // 20 ticks of 30 ms: about 600 ms, so about 5 periodic passes.
    assert!(
        ticker.code_releases() >= 2,
        "released {} times between its entries",
        ticker.code_releases()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_is_kept_when_the_host_is_told_to() {
    let cache = cache_dir();
    let wasm = Guest::new("(drop (call $delay (i64.const 400)))").wasm();
    Host::new(idle_upstream(), settings(cache.path()))
        .expect("host")
        .load_bytes("warm", &wasm)
        .expect("compiles");
    let host = Host::new(
        idle_upstream(),
        Settings {
            release_idle_code: None,
            ..settings(cache.path())
        },
    )
    .expect("host");
    let module = host.load_bytes("a", &wasm).expect("loads");
    let reports = Supervisor::new(host.clone(), Duration::from_secs(5))
        .run_all(vec![module.clone()])
        .await;
    assert!(matches!(reports[0].outcome, ModuleOutcome::Exited(0)));
    assert_eq!(module.code_releases(), 0);
    assert_eq!(host.host_code_releases(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_module_releases_its_fiber_stack_unless_told_to_keep_its_code() {
    let cache = cache_dir();
    // Idle past the release time while it waits 400 ms for a delay; exits when it completes.
    let wasm = Guest::new("(drop (call $delay (i64.const 400)))").wasm();
    for (release_idle_code, releases) in [(Some(RELEASE_AFTER), 1), (None, 0)] {
        let (host, outcome) = run_alone(cache.path(), release_idle_code, &wasm).await;
        assert!(matches!(outcome, ModuleOutcome::Exited(0)));
        assert_eq!(
            host.fiber_stack_releases(),
            releases,
            "release_idle_code: {release_idle_code:?}"
        );
    }
}

/// A guest linked stack-first (its `__stack_pointer` starts at 64 KiB, its data above) whose
/// `_start` leaves the word 7 below its stack pointer, at 4 KiB, and waits 400 ms for a delay;
/// at the delay's completion it exits with the word it reads there. `data_at` places its
/// data segment.
fn stale_stack_guest(data_at: u32) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(module
            (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
            (import "kube_wasm_v1" "delay" (func $delay (param i64) (result i64)))
            (memory (export "memory") 3)
            (global $__stack_pointer (mut i32) (i32.const 65536))
            (data (i32.const {data_at}) "data")
            (func (export "kube_wasm_abi_version") (result i32) (i32.const 0x10000))
            (func (export "kube_wasm_alloc") (param $len i32) (result i32) (i32.const 131072))
            (func (export "kube_wasm_complete") (param $op i64) (param $ptr i32) (param $len i32)
              (call $proc_exit (i32.load (i32.const 4096))))
            (func (export "_start")
              (i32.store (i32.const 4096) (i32.const 7))
              (drop (call $delay (i64.const 400)))))"#
    ))
    .expect("test WAT")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_module_releases_the_pages_below_its_stack_pointer_only_if_it_is_linked_stack_first()
 {
    let cache = cache_dir();
    for (data_at, release_idle_code, status) in [
        (65536, Some(RELEASE_AFTER), 0),
        (65536, None, 7),
        (1024, Some(RELEASE_AFTER), 7),
    ] {
        let (_, outcome) =
            run_alone(cache.path(), release_idle_code, &stale_stack_guest(data_at)).await;
        assert!(
            matches!(outcome, ModuleOutcome::Exited(s) if s == status),
            "data at {data_at}, release_idle_code {release_idle_code:?}: {outcome:?}"
        );
    }
}
