//! Reactor modules (ABI 1.4; SPEC.md, "Reactor modules and idle polls"), as a Go guest
//! behaves, written by hand: `_initialize` before any other export, then `kube_wasm_start`;
//! a non-blocking check answered with its clock; an idle poll answered at
//! once, its clock the next timer, at which `kube_wasm_wake` is called; a reactor with nothing
//! to wake it ended as deadlocked; a poll that would outlast the entry's deadline ending the
//! module; both entries refused.

mod common;

use std::time::Duration;

use common::{idle_upstream, run_guests, run_guests_on, test_settings};
use host_shim::runtime::abi::exports::Incompatible;
use host_shim::{ModuleError, ModuleOutcome, Settings};
use kube_wasm_abi::IDLE_FD;

/// A reactor module whose `_initialize`, `kube_wasm_start` and `kube_wasm_wake` run `init`,
/// `start` and `wake`. `$poll (timeout_ns, with_clock, with_idle) -> first event's
/// userdata` polls a relative monotonic clock (userdata 1) and/or the idle descriptor
/// (userdata 2); `$say N` prints line N of the strings below.
fn reactor(init: &str, start: &str, wake: &str, extra_exports: &str) -> Vec<u8> {
    let wat = format!(
        r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  ;; Lines, 16 bytes apart from 256: 0 init, 1 versioned, 2 check, 3 idle, 4 woken, 5 bad.
  (data (i32.const 256) "init\n")
  (data (i32.const 272) "versioned\n")
  (data (i32.const 288) "check\n")
  (data (i32.const 304) "idle\n")
  (data (i32.const 320) "woken\n")
  (data (i32.const 336) "bad\n")
  (func $say (param $n i32) (local $p i32) (local $len i32)
    (local.set $p (i32.add (i32.const 256) (i32.mul (local.get $n) (i32.const 16))))
    (local.set $len (i32.const 0))
    (loop $scan
      (local.set $len (i32.add (local.get $len) (i32.const 1)))
      (br_if $scan (i32.ne (i32.load8_u (i32.add (local.get $p) (i32.sub (local.get $len) (i32.const 1)))) (i32.const 10))))
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16))))
  (func $poll (param $timeout i64) (param $with_clock i32) (param $with_idle i32) (result i64)
    (local $subs i32) (local $n i32)
    ;; The clock at 1024, the idle descriptor right after it (1072).
    (i64.store (i32.const 1024) (i64.const 1))
    (i32.store8 (i32.const 1032) (i32.const 0))
    (i32.store (i32.const 1040) (i32.const 1))
    (i64.store (i32.const 1048) (local.get $timeout))
    (i64.store (i32.const 1056) (i64.const 1000))
    (i32.store16 (i32.const 1064) (i32.const 0))
    (i64.store (i32.const 1072) (i64.const 2))
    (i32.store8 (i32.const 1080) (i32.const 1))
    (i32.store (i32.const 1088) (i32.const {idle}))
    (local.set $subs (select (i32.const 1024) (i32.const 1072) (local.get $with_clock)))
    (local.set $n (i32.add (local.get $with_clock) (local.get $with_idle)))
    (if (call $poll_oneoff (local.get $subs) (i32.const 2048) (local.get $n) (i32.const 3000))
      (then (call $say (i32.const 5))))
    (if (i32.ne (i32.load (i32.const 3000)) (i32.const 1)) (then (call $say (i32.const 5))))
    (i64.load (i32.const 2048)))
  ;; As Go's exports do, every export but `_initialize` traps before `_initialize` ran.
  (global $initialized (mut i32) (i32.const 0))
  (func $check (if (i32.eqz (global.get $initialized)) (then unreachable)))
  (func (export "kube_wasm_abi_version") (result i32)
    (call $check) (call $say (i32.const 1)) (i32.const 0x00010004))
  (func (export "kube_wasm_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "kube_wasm_complete") (param i64 i32 i32))
  (func (export "_initialize") (global.set $initialized (i32.const 1)) {init})
  (func (export "kube_wasm_start") (call $check) {start})
  (func (export "kube_wasm_wake") (call $check) {wake})
  {extra_exports}
)"#,
        idle = IDLE_FD
    );
    wat::parse_str(&wat).unwrap_or_else(|e| panic!("bad test WAT: {e}\n{wat}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reactor_is_woken_at_the_timer_its_idle_poll_names() {
    let start = r#"
        ;; A clock of 0 with the idle descriptor: a non-blocking check, the clock's event.
        (if (i64.eq (call $poll (i64.const 0) (i32.const 1) (i32.const 1)) (i64.const 1))
          (then (call $say (i32.const 2))))
        ;; A clock of 50 ms with the idle descriptor: the idle poll, answered at once.
        (if (i64.eq (call $poll (i64.const 50000000) (i32.const 1) (i32.const 1)) (i64.const 2))
          (then (call $say (i32.const 3))))
    "#;
    let wake = "(call $say (i32.const 4)) (call $proc_exit (i32.const 0))";
    let wasm = reactor("(call $say (i32.const 0))", start, wake, "");
    let run = run_guests(idle_upstream(), &[("reactor", wasm)]).await;
    assert_eq!(run.outcome("reactor"), &ModuleOutcome::Exited(0));
    assert_eq!(
        run.lines_of("reactor"),
        ["init", "versioned", "check", "idle", "woken"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_idle_poll_replaces_the_timer() {
    // The start names a timer 10 ms away, each wake one 20 ms away (its own idle poll, which
    // replaces the timer that woke it); the third wake exits.
    let start = "(drop (call $poll (i64.const 10000000) (i32.const 1) (i32.const 1)))";
    let wake = r#"
        (call $say (i32.const 4))
        (i32.store (i32.const 600) (i32.add (i32.load (i32.const 600)) (i32.const 1)))
        (if (i32.eq (i32.load (i32.const 600)) (i32.const 3)) (then (call $proc_exit (i32.const 0))))
        (drop (call $poll (i64.const 20000000) (i32.const 1) (i32.const 1)))
    "#;
    let wasm = reactor("", start, wake, "");
    let run = run_guests(idle_upstream(), &[("ticks", wasm)]).await;
    assert_eq!(run.outcome("ticks"), &ModuleOutcome::Exited(0));
    assert_eq!(
        run.lines_of("ticks"),
        ["versioned", "woken", "woken", "woken"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reactor_with_nothing_to_wake_it_is_deadlocked() {
    // An idle poll without a clock, and no op: all goroutines asleep.
    let start = "(drop (call $poll (i64.const 0) (i32.const 0) (i32.const 1)))";
    let wasm = reactor("", start, "", "");
    let run = run_guests(idle_upstream(), &[("stuck", wasm)]).await;
    assert_eq!(
        run.outcome("stuck"),
        &ModuleOutcome::Failed(ModuleError::Deadlocked)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_that_outlasts_the_entry_deadline_ends_the_module() {
    // A blocking syscall: a clock of an hour, no idle descriptor.
    let start = "(drop (call $poll (i64.const 3600000000000) (i32.const 1) (i32.const 0)))";
    let wasm = reactor("", start, "", "");
    let (settings, buffer) = test_settings();
    let settings = Settings {
        entry_deadline: Duration::from_secs(1),
        ..settings
    };
    let run = run_guests_on(idle_upstream(), (settings, buffer), &[("blocked", wasm)]).await;
    assert!(
        matches!(
            run.outcome("blocked"),
            ModuleOutcome::Failed(ModuleError::DeadlineExceeded {
                during: "kube_wasm_start",
                ..
            })
        ),
        "{:?}",
        run.outcome("blocked")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_sleep_in_poll_is_served() {
    // A clock of 10 ms alone sleeps, then the module goes on (and exits).
    let start = r#"
        (if (i64.eq (call $poll (i64.const 10000000) (i32.const 1) (i32.const 0)) (i64.const 1))
          (then (call $say (i32.const 2))))
        (call $proc_exit (i32.const 0))
    "#;
    let wasm = reactor("", start, "", "");
    let run = run_guests(idle_upstream(), &[("sleeper", wasm)]).await;
    assert_eq!(run.outcome("sleeper"), &ModuleOutcome::Exited(0));
    assert_eq!(run.lines_of("sleeper"), ["versioned", "check"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_with_both_entries_is_refused() {
    let wasm = reactor("", "", "", r#"(func (export "_start"))"#);
    let run = run_guests(idle_upstream(), &[("both", wasm)]).await;
    assert!(
        matches!(
            run.outcome("both"),
            ModuleOutcome::Failed(ModuleError::Incompatible(Incompatible::EntryExports { .. }))
        ),
        "{:?}",
        run.outcome("both")
    );
}
