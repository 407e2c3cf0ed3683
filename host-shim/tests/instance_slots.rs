//! Instance slots (`Settings::max_resident`, by default the kernel's `vm.max_map_count`): at
//! most that many instances are resident at once; the modules beyond wait for a slot to
//! start or resume, a suspended module gives its slot to them, and the stop phase ends a
//! module that waits. One instance's memory mappings stay within what a slot counts for.

mod common;

use std::time::{Duration, Instant};

use common::{Guest, cache_dir, host_metric, idle_upstream, run_guests_with, test_settings};
use host_shim::runtime::instance_slots::MAPPINGS_PER_INSTANCE;
use host_shim::runtime::module::EndReason;
use host_shim::runtime::suspend::SuspendPolicy;
use host_shim::{Host, ModuleOptions, ModuleOutcome, Settings, Supervisor};

/// A guest that waits `ms` for a delay, then exits 0 (at its first final completion).
fn waits(ms: u64) -> Vec<u8> {
    Guest::new(&format!("(drop (call $delay (i64.const {ms})))")).wasm()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modules_beyond_the_slots_wait_for_one_and_all_run() {
    const WAIT: u64 = 300;
    let (settings, buffer) = test_settings();
    let settings = Settings {
        max_resident: Some(2),
        ..settings
    };
    let wasm = waits(WAIT);
    let guests: Vec<_> = ["a", "b", "c", "d", "e"]
        .into_iter()
        .map(|name| (name, wasm.clone()))
        .collect();
    let started = Instant::now();
    let run = run_guests_with(
        idle_upstream(),
        settings,
        buffer,
        Duration::from_secs(5),
        &guests,
        |_| {},
    )
    .await;
    let took = started.elapsed();
    for (name, _) in &guests {
        assert_eq!(run.outcome(name), &ModuleOutcome::Exited(0), "{name}");
    }
    // Two at a time: five modules take three rounds of their delay.
    assert!(
        took >= Duration::from_millis(3 * WAIT),
        "five modules of {WAIT} ms ran in {took:?} with two slots"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_module_gives_its_slot_to_a_waiting_one() {
    let (settings, buffer) = test_settings();
    let cache = cache_dir();
    let snapshots = tempfile::tempdir().expect("tempdir");
    let host = Host::new(
        idle_upstream(),
        Settings {
            max_resident: Some(1),
            cache_dir: Some(cache.path().to_owned()),
            suspend_dir: Some(snapshots.path().to_owned()),
            ..settings
        },
    )
    .expect("host");
    assert_eq!(host_metric(&host, "kube_wasm_instance_slots"), 1.0);
    // `sleeper` takes the one slot and waits 1.5 s, suspended after 50 ms idle; `quick`
    // starts once it is suspended, can only run in the slot it gave back, and exits after
    // 100 ms.
    let sleeper = host
        .load_bytes("sleeper", &waits(1500))
        .expect("compiles")
        .with_options(ModuleOptions {
            suspend: Some(SuspendPolicy::after(Duration::from_millis(50))),
            ..ModuleOptions::default()
        });
    let sleeping = tokio::spawn({
        let host = host.clone();
        async move {
            Supervisor::new(host, Duration::from_secs(5))
                .run_all(vec![sleeper])
                .await
        }
    });
    let suspended = "kube_wasm_module_state{module=\"sleeper\",state=\"suspended\"} 1";
    let deadline = Instant::now() + Duration::from_secs(1);
    while !host.metrics().encode().contains(suspended) {
        assert!(Instant::now() < deadline, "`sleeper` was not suspended");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let quick = host.load_bytes("quick", &waits(100)).expect("compiles");
    common::runs_to_exit(&host, quick).await;
    assert!(
        !sleeping.is_finished(),
        "`quick` ran only after `sleeper` ended, not while it was suspended"
    );
    let reports = sleeping.await.expect("sleeper's run");
    assert_eq!(reports[0].outcome, ModuleOutcome::Exited(0));
    let output = String::from_utf8_lossy(&buffer.lock().expect("output")).into_owned();
    assert!(output.contains("[sleeper] "), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stop_ends_a_module_that_waits_for_a_slot() {
    let (settings, buffer) = test_settings();
    let settings = Settings {
        max_resident: Some(1),
        ..settings
    };
    // Each prints its environment when it starts, then waits 20 s: one takes the slot, the
    // other waits for it until the stop.
    let wasm = Guest::new("(call $print_env) (drop (call $delay (i64.const 20000)))").wasm();
    let run = run_guests_with(
        idle_upstream(),
        settings,
        buffer,
        Duration::from_secs(5),
        &[("one", wasm.clone()), ("two", wasm)],
        |stop| {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                stop.request_stop();
            });
        },
    )
    .await;
    for name in ["one", "two"] {
        assert_eq!(
            run.outcome(name),
            &ModuleOutcome::Ended(EndReason::NeverAskedForStop),
            "{name}"
        );
    }
    let started = ["one", "two"]
        .into_iter()
        .filter(|name| !run.lines_of(name).is_empty())
        .count();
    assert_eq!(started, 1, "the waiting module started:\n{}", run.output);
}

/// Lines of this process's memory map: one mapping each.
fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .expect("/proc/self/maps")
        .lines()
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_resident_instance_takes_no_more_mappings_than_a_slot_counts() {
    const MODULES: usize = 64;
    let (settings, _) = test_settings();
    let cache = cache_dir();
    let host = Host::new(
        idle_upstream(),
        Settings {
            cache_dir: Some(cache.path().to_owned()),
            ..settings
        },
    )
    .expect("host");
    // Its memory grown past its image and written, as a controller's heap is; then it
    // waits, resident.
    let wasm = Guest::new(
        "(drop (memory.grow (i32.const 16)))
         (i32.store (i32.const 327680) (i32.const 1))
         (drop (call $delay (i64.const 3000)))",
    )
    .wasm();
    let modules: Vec<_> = (0..MODULES)
        .map(|i| host.load_bytes(&format!("m{i}"), &wasm).expect("compiles"))
        .collect();
    // One module first, so that the compiled module and the runtime's threads are mapped
    // before the count starts.
    let warm = host.load_bytes("warm", &waits(10)).expect("compiles");
    common::runs_to_exit(&host, warm).await;
    let before = mappings();
    let supervisor = Supervisor::new(host.clone(), Duration::from_secs(5));
    let stop = supervisor.stop_handle();
    let run = tokio::spawn(async move { supervisor.run_all(modules).await });
    let deadline = Instant::now() + Duration::from_secs(2);
    let resident = |host: &Host| {
        host.metrics()
            .encode()
            .lines()
            .filter(|l| {
                l.starts_with("kube_wasm_module_memory_bytes{module=\"m") && !l.ends_with(" 0")
            })
            .count()
    };
    while resident(&host) < MODULES && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(resident(&host), MODULES, "every module entered");
    let per_instance = mappings().saturating_sub(before) as f64 / MODULES as f64;
    stop.request_stop();
    let _ = run.await;
    eprintln!("{per_instance:.2} mappings per resident instance");
    assert!(
        per_instance <= MAPPINGS_PER_INSTANCE as f64,
        "{per_instance:.2} mappings per instance, a slot counts {MAPPINGS_PER_INSTANCE}"
    );
    assert!(
        per_instance >= 1.0,
        "{per_instance:.2}: nothing was counted"
    );
}
