//! Module lifecycle: start, exit, traps, ABI version checks, deadlines, delays, cancel, stop.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{
    Guest, Reply, fake_client, idle_upstream, run_guests, run_guests_with, test_settings,
};
use host_shim::runtime::abi::exports::Incompatible;
use host_shim::runtime::module::EndReason;
use host_shim::runtime::supervisor::exit_status;
use host_shim::{ModuleError, ModuleOutcome, Upstream};
use kube_wasm_abi::{ABI_MAJOR, ABI_MINOR, pack_version};

fn delay_guest() -> Vec<u8> {
    Guest::new("(drop (call $delay (i64.const 10)))").wasm()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delay_completes_with_elapsed() {
    let run = run_guests(idle_upstream(), &[("timer", delay_guest())]).await;
    assert_eq!(run.outcome("timer"), &ModuleOutcome::Exited(0));
    assert_eq!(run.lines_of("timer"), [r#"1:{"kind":"elapsed"}"#]);
    assert_eq!(exit_status(&run.reports), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_returns_one_for_live_ops_and_nothing_follows() {
    let start = r#"
        (local $d i64)
        (local.set $d (call $delay (i64.const 10)))
        (call $println_num (i64.extend_i32_u (call $cancel (local.get $d))))
        (call $println_num (i64.extend_i32_u (call $cancel (local.get $d))))
        (call $println_num (i64.extend_i32_u (call $cancel (i64.const 999))))
        (call $println_num (i64.extend_i32_u (call $cancel (i64.const 0))))
        (drop (call $delay (i64.const 40)))
    "#;
    let run = run_guests(idle_upstream(), &[("cancel", Guest::new(start).wasm())]).await;
    assert_eq!(run.outcome("cancel"), &ModuleOutcome::Exited(0));
    assert_eq!(
        run.lines_of("cancel"),
        ["1", "0", "0", "0", r#"2:{"kind":"elapsed"}"#]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_after_the_final_completion_returns_zero() {
    let complete = r#"
        (call $println_num (i64.extend_i32_u (call $cancel (local.get $op))))
        (call $proc_exit (i32.const 0))
    "#;
    let guest = Guest::new("(drop (call $delay (i64.const 1)))").complete(complete);
    let run = run_guests(idle_upstream(), &[("late", guest.wasm())]).await;
    assert_eq!(run.outcome("late"), &ModuleOutcome::Exited(0));
    assert_eq!(run.lines_of("late"), ["0"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_statuses_and_traps_end_only_their_module() {
    let run = run_guests(
        idle_upstream(),
        &[
            (
                "clean",
                Guest::new("(call $proc_exit (i32.const 0))").wasm(),
            ),
            (
                "three",
                Guest::new("(call $proc_exit (i32.const 3))").wasm(),
            ),
            ("panics", Guest::new("unreachable").wasm()),
            (
                "panics-later",
                Guest::new("(drop (call $delay (i64.const 1)))")
                    .complete("unreachable")
                    .wasm(),
            ),
            ("timer", delay_guest()),
        ],
    )
    .await;
    assert_eq!(run.outcome("clean"), &ModuleOutcome::Exited(0));
    assert_eq!(run.outcome("three"), &ModuleOutcome::Exited(3));
    match run.outcome("panics") {
        ModuleOutcome::Failed(ModuleError::Trap {
            during,
            reason,
            backtrace,
        }) => {
            assert_eq!(*during, "_start");
            assert!(reason.contains("unreachable"), "{reason}");
            assert!(!reason.contains('\n'), "{reason}");
            assert!(backtrace.contains("wasm backtrace"), "{backtrace}");
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    assert!(matches!(
        run.outcome("panics-later"),
        ModuleOutcome::Failed(ModuleError::Trap {
            during: "kube_wasm_complete",
            ..
        })
    ));
    assert_eq!(run.outcome("timer"), &ModuleOutcome::Exited(0));
    assert_eq!(exit_status(&run.reports), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incompatible_modules_are_refused_with_both_versions() {
    let ours = format!("ABI {ABI_MAJOR}.{ABI_MINOR}");
    let newer_minor = format!("(i32.const {})", pack_version(ABI_MAJOR, ABI_MINOR + 1));
    let run = run_guests(
        idle_upstream(),
        &[
            ("no-version", Guest::new("").version(None).wasm()),
            ("major-2", Guest::new("").version(Some("(i32.const 0x20000)")).wasm()),
            ("newer-minor", Guest::new("").version(Some(&newer_minor)).wasm()),
            (
                "imports-v2",
                Guest::new("")
                    .imports(r#"(import "kube_wasm_v2" "watch" (func $watch2 (param i32 i32) (result i64)))"#)
                    .wasm(),
            ),
            (
                "imports-unknown",
                Guest::new("")
                    .imports(r#"(import "kube_wasm_v1" "teleport" (func $teleport (result i64)))"#)
                    .wasm(),
            ),
            ("timer", delay_guest()),
        ],
    )
    .await;
    let refusal = |name: &str| match run.outcome(name) {
        ModuleOutcome::Failed(err @ ModuleError::Incompatible(_)) => err.to_string(),
        other => panic!("{name}: expected a refusal, got {other:?}"),
    };
    assert!(matches!(
        run.outcome("no-version"),
        ModuleOutcome::Failed(ModuleError::Incompatible(Incompatible::MissingVersion))
    ));
    assert!(refusal("no-version").contains("kube_wasm_abi_version"));
    let major = refusal("major-2");
    assert!(
        major.contains("ABI 2.0") && major.contains(&ours),
        "{major}"
    );
    let minor = refusal("newer-minor");
    let theirs = format!("ABI {ABI_MAJOR}.{}", ABI_MINOR + 1);
    assert!(minor.contains(&theirs) && minor.contains(&ours), "{minor}");
    assert!(refusal("imports-v2").contains("kube_wasm_v2::watch"));
    assert!(refusal("imports-unknown").contains("teleport"));
    assert!(run.lines_of("major-2").is_empty(), "_start never ran");
    assert_eq!(run.outcome("timer"), &ModuleOutcome::Exited(0));
}

/// A guest looping forever inside one entry is ended at the deadline; the other module keeps
/// running meanwhile, even on a single-threaded runtime (the looping guest yields every tick).
#[tokio::test(flavor = "current_thread")]
async fn endless_loop_hits_the_entry_deadline_without_starving_others() {
    let (mut settings, buffer) = test_settings();
    settings.entry_deadline = Duration::from_millis(1000);
    let looping = Guest::new("(loop $forever (br $forever))").wasm();
    let started = std::time::Instant::now();
    let timer_seen = Arc::new(std::sync::Mutex::new(None));
    let (watched, seen_at) = (buffer.clone(), timer_seen.clone());
    let run = run_guests_with(
        idle_upstream(),
        settings,
        buffer,
        Duration::from_secs(5),
        &[("spin", looping), ("timer", delay_guest())],
        move |_| {
            // This task shares the only thread with the looping guest.
            tokio::spawn(async move {
                loop {
                    if String::from_utf8_lossy(&watched.lock().expect("output"))
                        .contains("[timer] 1:")
                    {
                        *seen_at.lock().expect("time") = Some(started.elapsed());
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            });
        },
    )
    .await;
    match run.outcome("spin") {
        ModuleOutcome::Failed(
            err @ ModuleError::DeadlineExceeded {
                during: "_start", ..
            },
        ) => {
            assert!(err.to_string().contains("1s"), "{err}");
        }
        other => panic!("expected a deadline overrun, got {other:?}"),
    }
    assert_eq!(run.outcome("timer"), &ModuleOutcome::Exited(0));
    let seen_at = timer_seen
        .lock()
        .expect("time")
        .expect("the timer module printed");
    assert!(
        seen_at < Duration::from_millis(700),
        "the other module ran while the guest looped (after {seen_at:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alloc_failures_end_the_module() {
    let start = "(drop (call $delay (i64.const 1)))";
    let run = run_guests(
        idle_upstream(),
        &[
            ("oom", Guest::new(start).alloc("(i32.const 0)").wasm()),
            (
                "wild",
                Guest::new(start).alloc("(i32.const 0x7fff0000)").wasm(),
            ),
            ("edge", Guest::new(start).alloc("(i32.const 262140)").wasm()),
            ("timer", delay_guest()),
        ],
    )
    .await;
    assert!(matches!(
        run.outcome("oom"),
        ModuleOutcome::Failed(ModuleError::AllocFailed { len: 22 })
    ));
    assert!(matches!(
        run.outcome("wild"),
        ModuleOutcome::Failed(ModuleError::AllocOutOfBounds { .. })
    ));
    assert!(matches!(
        run.outcome("edge"),
        ModuleOutcome::Failed(ModuleError::AllocOutOfBounds { .. })
    ));
    assert_eq!(run.outcome("timer"), &ModuleOutcome::Exited(0));
}

/// Stopping: `stop_signal` completes with `stop`; a module that never asked is ended at once;
/// one that asked but does not exit is ended at the stop timeout; a module whose `_start`
/// returned with no ops has finished (its `main` returned: status 0, as natively); and every
/// module's live watch is closed upstream when it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_completes_stop_signals_and_closes_watches() {
    let closed: Vec<Arc<AtomicBool>> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let flags = closed.clone();
    let (client, seen) = fake_client(move |req| {
        let index = if req.uri.path().contains("/first") {
            0
        } else if req.uri.path().contains("/second") {
            1
        } else {
            2
        };
        Reply::new(200, vec![]).hanging(flags[index].clone())
    });
    let upstream = Upstream::new(client, "https://fake.invalid");
    let watch_frame = |path: &str| {
        kube_wasm_abi::encode_frame(
            &serde_json::json!({"path": path, "resource_version": "0"}),
            b"",
        )
    };
    let polite = {
        let frame = watch_frame("/api/v1/first");
        Guest::new(&format!(
            "(drop {}) (drop (call $stop_signal))",
            common::call_with_frame("watch", &frame)
        ))
        .frame(&frame)
        .wasm()
    };
    let deaf = {
        let frame = watch_frame("/api/v1/second");
        Guest::new(&format!(
            "(drop {})",
            common::call_with_frame("watch", &frame)
        ))
        .frame(&frame)
        .wasm()
    };
    let stubborn = {
        let frame = watch_frame("/api/v1/third");
        Guest::new(&format!(
            "(drop {}) (drop (call $stop_signal))",
            common::call_with_frame("watch", &frame)
        ))
        .frame(&frame)
        .expect_finals(99)
        .wasm()
    };
    let returned = Guest::new("").wasm();

    let (settings, buffer) = test_settings();
    let run = run_guests_with(
        upstream,
        settings,
        buffer,
        Duration::from_millis(300),
        &[
            ("polite", polite),
            ("deaf", deaf),
            ("stubborn", stubborn),
            ("returned", returned),
        ],
        move |stop| {
            tokio::spawn(async move {
                // Stop once all three watches are open upstream.
                for _ in 0..500 {
                    if seen.lock().expect("log").len() == 3 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                assert_eq!(seen.lock().expect("log").len(), 3, "three watches started");
                stop.request_stop();
            });
        },
    )
    .await;
    assert_eq!(run.outcome("polite"), &ModuleOutcome::Exited(0));
    assert_eq!(
        without_watch_head(run.lines_of("polite")),
        [r#"2:{"kind":"stop"}"#]
    );
    assert_eq!(
        run.outcome("deaf"),
        &ModuleOutcome::Ended(EndReason::NeverAskedForStop)
    );
    assert_eq!(
        run.outcome("stubborn"),
        &ModuleOutcome::Ended(EndReason::StopTimeout)
    );
    assert_eq!(
        without_watch_head(run.lines_of("stubborn")),
        [r#"2:{"kind":"stop"}"#]
    );
    assert_eq!(run.outcome("returned"), &ModuleOutcome::Exited(0));
    // Ending a module aborts its op tasks; the aborted tasks drop their response bodies.
    for (i, flag) in closed.iter().enumerate() {
        for _ in 0..100 {
            if flag.load(Ordering::SeqCst) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(flag.load(Ordering::SeqCst), "watch {i} was closed upstream");
    }
    assert_eq!(exit_status(&run.reports), 1);
}

/// The recorded completions minus the `head` of watch op 1, which may arrive before or after
/// the stop request depending on timing.
fn without_watch_head(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .filter(|l| !l.starts_with(r#"1:{"kind":"head","status":200"#))
        .collect()
}
