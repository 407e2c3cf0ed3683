//! Idle stacks (`Settings::release_idle_stacks`): a module not entered for the release time
//! releases its fiber stack and the dead pages of its shadow stack, and keeps them when the
//! host is told to.

mod common;

use std::time::Duration;

use common::{Guest, cache_dir, idle_upstream, test_settings};
use host_shim::{Host, ModuleOutcome, Settings, Supervisor};

const RELEASE_AFTER: Duration = Duration::from_millis(100);

fn settings(cache: &std::path::Path) -> Settings {
    let (settings, _) = test_settings();
    Settings {
        cache_dir: Some(cache.to_owned()),
        release_idle_stacks: Some(RELEASE_AFTER),
        ..settings
    }
}

/// Runs `wasm` as the one module of a new host that releases idle stacks after
/// `release_idle_stacks`; returns the host and the module's outcome.
async fn run_alone(
    cache: &std::path::Path,
    release_idle_stacks: Option<Duration>,
    wasm: &[u8],
) -> (Host, ModuleOutcome) {
    let host = Host::new(
        idle_upstream(),
        Settings {
            release_idle_stacks,
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
async fn an_idle_module_releases_its_fiber_stack_unless_told_to_keep_it() {
    let cache = cache_dir();
    // Idle past the release time while it waits 400 ms for a delay; exits when it completes.
    let wasm = Guest::new("(drop (call $delay (i64.const 400)))").wasm();
    for (release_idle_stacks, releases) in [(Some(RELEASE_AFTER), 1), (None, 0)] {
        let (host, outcome) = run_alone(cache.path(), release_idle_stacks, &wasm).await;
        assert!(matches!(outcome, ModuleOutcome::Exited(0)));
        assert_eq!(
            host.fiber_stack_releases(),
            releases,
            "release_idle_stacks: {release_idle_stacks:?}"
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
    for (data_at, release_idle_stacks, status) in [
        (65536, Some(RELEASE_AFTER), 0),
        (65536, None, 7),
        (1024, Some(RELEASE_AFTER), 7),
    ] {
        let (_, outcome) = run_alone(
            cache.path(),
            release_idle_stacks,
            &stale_stack_guest(data_at),
        )
        .await;
        assert!(
            matches!(outcome, ModuleOutcome::Exited(s) if s == status),
            "data at {data_at}, release_idle_stacks {release_idle_stacks:?}: {outcome:?}"
        );
    }
}
