//! Isolation with restarts: modules that loop forever, allocate past their memory limit,
//! panic or make malformed ABI calls are ended and restarted with backoff, each time with
//! fresh state, while a healthy module beside them keeps running; a module that exits
//! cleanly is not restarted.

mod common;

use std::time::Duration;

use common::{Guest, call_with_frame, idle_upstream, test_settings};
use host_shim::backoff::Backoff;
use host_shim::runtime::engine::PoolSize;
use host_shim::runtime::module::EndReason;
use host_shim::runtime::supervisor::ModuleReport;
use host_shim::{
    Host, ModuleError, ModuleOptions, ModuleOutcome, RestartPolicy, Settings, Supervisor,
};

const CAP: usize = 1 << 20;

fn on_failure() -> ModuleOptions {
    ModuleOptions {
        restart: RestartPolicy::OnFailure,
        memory_limit: Some(CAP),
        ..ModuleOptions::default()
    }
}

fn settings() -> (Settings, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    let (settings, buffer) = test_settings();
    let settings = Settings {
        entry_deadline: Duration::from_millis(200),
        backoff: Backoff {
            initial: Duration::from_millis(50),
            max: Duration::from_millis(200),
            reset_after: Duration::from_secs(60),
        },
        pool: Some(PoolSize {
            instances: 8,
            max_memory_bytes: 4 << 20,
        }),
        ..settings
    };
    (settings, buffer)
}

/// The modules of [`hostile_modules_restart_while_a_healthy_one_keeps_running`] that fail.
const HOSTILE: [&str; 4] = ["looper", "hog", "panicker", "garbage"];

/// The restarts of `module` so far, from the host's metrics.
fn restarts_so_far(host: &Host, module: &str) -> u64 {
    let series = format!("kube_wasm_module_restarts_total{{module=\"{module}\"}} ");
    host.metrics()
        .encode()
        .lines()
        .find_map(|line| line.strip_prefix(&series)?.parse().ok())
        .unwrap_or(0)
}

fn report<'a>(reports: &'a [ModuleReport], name: &str) -> &'a ModuleReport {
    reports
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no report for {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_modules_restart_while_a_healthy_one_keeps_running() {
    let garbage: &[u8] = b"\x05\x00\x00\x00hello";
    let guests = [
        ("looper", Guest::new("(loop $forever (br $forever))").wasm()),
        (
            "hog",
            // 16 pages more than the 4 it starts with: over the 1 MiB cap.
            Guest::new("(drop (memory.grow (i32.const 16)))").wasm(),
        ),
        (
            "panicker",
            // Traps on its first completion: its delay's, or the stop signal's if the host
            // stops while it waits (without asking for the signal it would be ended then).
            Guest::new("(drop (call $stop_signal)) (drop (call $delay (i64.const 1)))")
                .complete("unreachable")
                .wasm(),
        ),
        (
            "garbage",
            Guest::new(&format!(
                "(drop {})",
                call_with_frame("http_request", garbage)
            ))
            .frame(garbage)
            .wasm(),
        ),
        (
            "healthy",
            Guest::new("(drop (call $delay (i64.const 20)))")
                .complete("(call $println_num (local.get $op)) (drop (call $delay (i64.const 20)))")
                .wasm(),
        ),
        ("done", Guest::new("(call $proc_exit (i32.const 0))").wasm()),
    ];
    let (settings, buffer) = settings();
    let host = Host::new(idle_upstream(), settings).expect("host");
    let modules = guests
        .iter()
        .map(|(name, wasm)| {
            host.load_bytes(name, wasm)
                .expect("compiles")
                .with_options(on_failure())
        })
        .collect();
    let watched = host.clone();
    let supervisor = Supervisor::new(host, Duration::from_secs(1));
    let stop = supervisor.stop_handle();
    // At least 3 s, and on a busy machine until every hostile module restarted three times.
    tokio::spawn(async move {
        let started = tokio::time::Instant::now();
        tokio::time::sleep(Duration::from_secs(3)).await;
        while started.elapsed() < Duration::from_secs(20)
            && HOSTILE
                .iter()
                .any(|name| restarts_so_far(&watched, name) < 3)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stop.request_stop();
    });
    let reports = tokio::time::timeout(Duration::from_secs(40), supervisor.run_all(modules))
        .await
        .expect("the host stops within 40 s");

    let looper = report(&reports, "looper");
    assert!(
        matches!(
            looper.outcome,
            ModuleOutcome::Failed(ModuleError::DeadlineExceeded {
                during: "_start",
                ..
            })
        ),
        "{:?}",
        looper.outcome
    );
    let hog = report(&reports, "hog");
    match &hog.outcome {
        ModuleOutcome::Failed(ModuleError::MemoryLimit(over)) => {
            assert_eq!(over.limit, CAP);
            assert_eq!(over.requested, 20 * 65536);
        }
        other => panic!("hog: expected the memory limit, got {other:?}"),
    }
    let panicker = report(&reports, "panicker");
    assert!(
        matches!(
            panicker.outcome,
            ModuleOutcome::Failed(ModuleError::Trap {
                during: "kube_wasm_complete",
                ..
            })
        ),
        "{:?}",
        panicker.outcome
    );
    assert!(matches!(
        report(&reports, "garbage").outcome,
        ModuleOutcome::Failed(ModuleError::BadAbiCall(_))
    ));
    // Backoff 50, 100, 200, 200… ms: in 3 s each hostile module restarts several times
    // (the looper's 200 ms deadline makes its cycle the slowest).
    for name in HOSTILE {
        let restarts = report(&reports, name).restarts;
        assert!(restarts >= 3, "{name} restarted {restarts} times");
    }

    let done = report(&reports, "done");
    assert_eq!(
        (&done.outcome, done.restarts),
        (&ModuleOutcome::Exited(0), 0)
    );

    let healthy = report(&reports, "healthy");
    assert_eq!(healthy.restarts, 0);
    let output = String::from_utf8_lossy(&buffer.lock().expect("output")).into_owned();
    let ticks: Vec<u64> = output
        .lines()
        .filter_map(|l| l.strip_prefix("[healthy] "))
        .map(|l| l.parse().expect("an op id"))
        .collect();
    // A tick every 20 ms for 3 s is 150 at best; a third of that shows it was not held up.
    assert!(ticks.len() >= 50, "only {} ticks: {ticks:?}", ticks.len());
    assert!(
        ticks.windows(2).all(|w| w[1] == w[0] + 1),
        "one module instance throughout"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_module_starts_fresh_and_never_restarts_under_never() {
    // Prints its first op id and fails: each run is a new instance, so each prints 1.
    let wasm = Guest::new("(drop (call $delay (i64.const 1)))")
        .complete("(call $println_num (local.get $op)) (call $proc_exit (i32.const 3))")
        .wasm();
    let (settings, buffer) = settings();
    let host = Host::new(idle_upstream(), settings).expect("host");
    let again = host
        .load_bytes("again", &wasm)
        .expect("compiles")
        .with_options(on_failure());
    let once = host.load_bytes("once", &wasm).expect("compiles");
    assert!(
        again.shares_code_with(&once),
        "one compilation per distinct wasm"
    );
    assert_eq!(once.options().restart, RestartPolicy::Never);
    let supervisor = Supervisor::new(host, Duration::from_secs(1));
    let stop = supervisor.stop_handle();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(800)).await;
        stop.request_stop();
    });
    let reports = supervisor.run_all(vec![again, once]).await;
    let again = report(&reports, "again");
    // The stop usually finds it waiting out its backoff (its last run exited 3), but may find
    // it inside a run, which it ends as a native process without a stop handler would end.
    let stopped_in_a_run = match &again.outcome {
        ModuleOutcome::Exited(3) => false,
        ModuleOutcome::Ended(EndReason::NeverAskedForStop) => true,
        other => panic!("`again` ended as {other:?}"),
    };
    assert!(again.restarts >= 2, "{}", again.restarts);
    let once = report(&reports, "once");
    assert_eq!(
        (&once.outcome, once.restarts),
        (&ModuleOutcome::Exited(3), 0)
    );
    let output = String::from_utf8_lossy(&buffer.lock().expect("output")).into_owned();
    let again_lines: Vec<&str> = output
        .lines()
        .filter_map(|l| l.strip_prefix("[again] "))
        .collect();
    // One line a run; a run the stop ended may not have printed yet.
    let runs = again.restarts + 1;
    let printed = again_lines.len() as u32;
    assert!(
        printed == runs || (stopped_in_a_run && printed + 1 == runs),
        "{printed} lines from {runs} runs"
    );
    assert!(again_lines.iter().all(|l| *l == "1"), "{again_lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn module_options_set_env_and_namespace() {
    let guest = Guest::new("(call $print_env) (call $proc_exit (i32.const 0))").wasm();
    let (settings, buffer) = settings();
    let settings = Settings {
        env: vec![
            ("SHARED".into(), "host".into()),
            ("ONLY_HOST".into(), "1".into()),
        ],
        ..settings
    };
    let host = Host::new(idle_upstream(), settings).expect("host");
    let module = host
        .load_bytes("env", &guest)
        .expect("compiles")
        .with_options(ModuleOptions {
            env: vec![
                ("SHARED".into(), "module".into()),
                ("KUBE_WASM_MODULE".into(), "spoofed".into()),
            ],
            namespace: Some("team-a".into()),
            ..ModuleOptions::default()
        });
    let reports = Supervisor::new(host, Duration::from_secs(1))
        .run_all(vec![module])
        .await;
    assert_eq!(report(&reports, "env").outcome, ModuleOutcome::Exited(0));
    let output = String::from_utf8_lossy(&buffer.lock().expect("output")).into_owned();
    let env: Vec<&str> = output
        .lines()
        .filter_map(|l| l.strip_prefix("[env] "))
        .flat_map(|l| l.split('\0'))
        .filter(|v| !v.is_empty())
        .collect();
    assert!(env.contains(&"KUBE_WASM_MODULE=env"), "{env:?}");
    assert!(
        env.contains(&"KUBE_WASM_DEFAULT_NAMESPACE=team-a"),
        "{env:?}"
    );
    assert!(env.contains(&"SHARED=module"), "{env:?}");
    assert!(env.contains(&"ONLY_HOST=1"), "{env:?}");
    assert!(!env.iter().any(|v| v.contains("spoofed")), "{env:?}");
}
