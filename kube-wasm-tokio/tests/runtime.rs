//! The tokio facade on the guest executor, driven by the fake host.

extern crate kube_wasm_tokio as tokio;

use kube_wasm_abi::Completion;
use kube_wasm_guest::fake::{FakeHost, Submitted};
use std::time::Duration;

fn only_delay(host: &FakeHost) -> (u64, u64) {
    match host.take_submitted()[..] {
        [Submitted::Delay { id, millis }] => (id, millis),
        ref other => panic!("expected one delay, got {other:?}"),
    }
}

#[test]
fn sleep_is_a_host_delay_and_completes_when_it_elapses() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        tokio::time::sleep(Duration::from_millis(250)).await;
        "woke"
    });
    host.run_until_stalled();
    let (id, millis) = only_delay(&host);
    assert!((249..=250).contains(&millis), "{millis}");
    assert_eq!(task.output(), None);
    host.complete(id, &Completion::Elapsed {}, b"");
    assert_eq!(task.output(), Some("woke"));
}

#[test]
fn zero_sleep_needs_no_host_timer() {
    let host = FakeHost::install();
    let mut task = host.spawn(async { tokio::time::sleep(Duration::ZERO).await });
    host.run_until_stalled();
    assert!(host.take_submitted().is_empty());
    assert_eq!(task.output(), Some(()));
}

#[test]
fn timeout_elapses_and_cancels_the_inner_future() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        tokio::time::timeout(
            Duration::from_secs(1),
            tokio::time::sleep(Duration::from_secs(60)),
        )
        .await
    });
    host.run_until_stalled();
    let submitted = host.take_submitted();
    let millis: Vec<u64> = submitted
        .iter()
        .map(|s| match s {
            Submitted::Delay { millis, .. } => *millis,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(millis.len(), 2);
    assert!(millis[0] > 59_000 && millis[1] <= 1_000, "{millis:?}");
    let (inner, outer) = (submitted[0].id(), submitted[1].id());
    host.complete(outer, &Completion::Elapsed {}, b"");
    let err = task.output().expect("finished").expect_err("timed out");
    assert_eq!(err.to_string(), "deadline has elapsed");
    assert_eq!(host.cancelled(), vec![inner], "the inner sleep was dropped");
}

#[test]
fn timeout_passes_through_a_ready_value_and_cancels_its_timer() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let _ = tx.send(42);
        });
        tokio::time::timeout(Duration::from_secs(5), rx).await
    });
    host.run_until_stalled();
    let submitted = host.take_submitted();
    assert_eq!(submitted.len(), 2);
    let timer = submitted
        .iter()
        .find(|s| matches!(s, Submitted::Delay { millis, .. } if *millis > 1000))
        .expect("timeout timer")
        .id();
    let sleeper = submitted
        .iter()
        .find(|s| s.id() != timer)
        .expect("sleep")
        .id();
    host.complete(sleeper, &Completion::Elapsed {}, b"");
    let got = task.output().expect("finished").expect("in time");
    assert_eq!(got.ok(), Some(42));
    assert_eq!(host.cancelled(), vec![timer]);
}

#[test]
fn select_join_and_channels_work_across_tasks() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(4);
        let producer = tokio::spawn(async move {
            for i in 0..3 {
                tx.send(i).await.expect("receiver alive");
                tokio::task::yield_now().await;
            }
        });
        let mut got = Vec::new();
        loop {
            tokio::select! {
                Some(v) = rx.recv() => got.push(v),
                _ = tokio::time::sleep(Duration::from_secs(30)) => break,
            }
        }
        let (a, b) = tokio::join!(async { 1 }, async { 2 });
        producer.await.expect("producer finished");
        (got, a + b)
    });
    host.run_until_stalled();
    assert_eq!(task.output(), None, "waits for the select timeout");
    // Each select loop iteration created a sleep; the ones dropped were cancelled.
    let delays = host.take_submitted();
    let last = delays.last().expect("a pending sleep").id();
    assert_eq!(host.live(), vec![last]);
    host.complete(last, &Completion::Elapsed {}, b"");
    assert_eq!(task.output(), Some((vec![0, 1, 2], 3)));
}

#[test]
fn interval_first_tick_is_immediate_then_waits_a_period() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let mut iv = tokio::time::interval(Duration::from_millis(100));
        let first = iv.tick().await;
        let second = iv.tick().await;
        second - first
    });
    host.run_until_stalled();
    let (id, millis) = only_delay(&host);
    assert!(millis <= 100 && millis > 0, "{millis}");
    host.complete(id, &Completion::Elapsed {}, b"");
    assert_eq!(task.output(), Some(Duration::from_millis(100)));
}

#[test]
fn ctrl_c_completes_on_the_host_stop_request() {
    let host = FakeHost::install();
    let mut task = host.spawn(async { tokio::signal::ctrl_c().await.is_ok() });
    host.run_until_stalled();
    let id = match host.take_submitted()[..] {
        [Submitted::StopSignal { id }] => id,
        ref other => panic!("{other:?}"),
    };
    host.complete(id, &Completion::Stop {}, b"");
    assert_eq!(task.output(), Some(true));
}

#[test]
fn spawn_blocking_runs_inline_and_join_handles_abort() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let v = tokio::task::spawn_blocking(|| 6 * 7).await.expect("ran");
        let h = tokio::spawn(async {
            tokio::time::sleep(Duration::from_secs(10)).await;
        });
        h.abort();
        (v, h.await.map_err(|e| e.is_cancelled()))
    });
    host.run_until_stalled();
    assert_eq!(task.output(), Some((42, Err(true))));
}

mod main_returning_ok {
    #[tokio::main(flavor = "multi_thread", worker_threads = 4)]
    pub async fn main() -> Result<(), String> {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        Ok(())
    }
}

mod main_returning_err {
    #[tokio::main]
    pub async fn main() -> Result<(), String> {
        Err("boom".into())
    }
}

mod main_returning_unit {
    #[tokio::main]
    pub async fn main() {}
}

#[test]
fn main_attribute_maps_the_output_to_an_exit_status() {
    let host = FakeHost::install();
    main_returning_ok::main();
    assert_eq!(host.exit_status(), None, "waits for its sleep");
    let (id, _) = only_delay(&host);
    host.complete(id, &Completion::Elapsed {}, b"");
    assert_eq!(host.exit_status(), Some(0));

    let host = FakeHost::install();
    main_returning_err::main();
    assert_eq!(host.exit_status(), Some(1));

    let host = FakeHost::install();
    main_returning_unit::main();
    assert_eq!(host.exit_status(), Some(0));
}

#[test]
fn instant_now_is_the_fake_hosts_virtual_clock() {
    let host = FakeHost::install();
    let start = tokio::time::Instant::now();
    host.advance(Duration::from_millis(1_250));
    assert_eq!(start.elapsed(), Duration::from_millis(1_250));
    assert_eq!(tokio::time::Instant::now().into_std(), host.now());
}

#[test]
fn sleep_completes_at_its_deadline_not_before() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let start = tokio::time::Instant::now();
        tokio::time::sleep(Duration::from_millis(100)).await;
        start.elapsed()
    });
    host.run_until_stalled();
    host.advance(Duration::from_millis(99));
    assert_eq!(task.output(), None);
    host.advance(Duration::from_millis(1));
    assert_eq!(task.output(), Some(Duration::from_millis(100)));
}

/// Ticks of a 100 ms interval around one 250 ms stall after the first tick, as virtual
/// milliseconds since the start.
fn ticks_around_a_stall(behavior: tokio::time::MissedTickBehavior) -> Vec<u128> {
    let host = FakeHost::install();
    let mut task = host.spawn(async move {
        let start = tokio::time::Instant::now();
        let mut iv = tokio::time::interval(Duration::from_millis(100));
        iv.set_missed_tick_behavior(behavior);
        let mut at = Vec::new();
        for i in 0..4 {
            iv.tick().await;
            at.push(start.elapsed().as_millis());
            if i == 0 {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
        at
    });
    host.run_until_stalled();
    host.advance(Duration::from_secs(1));
    task.output().expect("four ticks within a second")
}

#[test]
fn interval_missed_ticks_follow_tokios_behaviors() {
    use tokio::time::MissedTickBehavior::{Burst, Delay, Skip};
    // Burst: the missed ticks come at once, then the original schedule.
    assert_eq!(ticks_around_a_stall(Burst), [0, 250, 250, 300]);
    // Delay: one tick at once, then a period from it.
    assert_eq!(ticks_around_a_stall(Delay), [0, 250, 350, 450]);
    // Skip: one tick at once, then the next multiple of the period.
    assert_eq!(ticks_around_a_stall(Skip), [0, 250, 300, 400]);
}

#[test]
fn timeout_measures_virtual_time() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let slow = tokio::time::sleep(Duration::from_secs(10));
        tokio::time::timeout(Duration::from_secs(3), slow)
            .await
            .is_err()
    });
    host.run_until_stalled();
    host.advance(Duration::from_millis(2_999));
    assert_eq!(task.output(), None);
    host.advance(Duration::from_millis(1));
    assert_eq!(task.output(), Some(true), "timed out after exactly 3 s");
    assert!(
        host.live().is_empty(),
        "the inner sleep's timer was cancelled"
    );
}

#[test]
fn sigterm_and_sigint_streams_fire_once_on_the_host_stop_request() {
    use tokio::signal::unix::{SignalKind, signal};
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let mut term = signal(SignalKind::terminate()).expect("a stream");
        let mut int = signal(SignalKind::interrupt()).expect("a stream");
        let mut hup = signal(SignalKind::hangup()).expect("a stream");
        let which = tokio::select! {
            _ = term.recv() => "term",
            _ = hup.recv() => "hup",
        };
        let also_int = int.recv().await;
        // After the one stop request, no further signal comes.
        let again = tokio::time::timeout(Duration::from_secs(60), term.recv()).await;
        (which, also_int, again.is_err())
    });
    host.run_until_stalled();
    let stops: Vec<_> = host
        .take_submitted()
        .into_iter()
        .filter(|op| matches!(op, Submitted::StopSignal { .. }))
        .collect();
    assert_eq!(
        stops.len(),
        2,
        "SIGTERM and SIGINT listen; SIGHUP needs no host op"
    );
    for op in stops {
        host.complete(op.id(), &Completion::Stop {}, b"");
    }
    host.advance(Duration::from_secs(60));
    assert_eq!(task.output(), Some(("term", Some(()), true)));
}

fn quota_error() -> Completion {
    Completion::Error(kube_wasm_abi::OpError::new(
        kube_wasm_abi::ErrorCode::Quota,
        "module `m` is at its quota of 3 pending ops",
    ))
}

#[test]
fn ctrl_c_fails_when_the_host_refuses_to_listen() {
    let host = FakeHost::install();
    let mut task = host.spawn(async { tokio::signal::ctrl_c().await.map_err(|e| e.to_string()) });
    host.run_until_stalled();
    let id = match host.take_submitted()[..] {
        [Submitted::StopSignal { id }] => id,
        ref other => panic!("{other:?}"),
    };
    host.complete(id, &quota_error(), b"");
    let refused = task.output().expect("finished").expect_err("an io error");
    assert!(refused.contains("quota of 3 pending ops"), "{refused}");
}

#[test]
fn a_refused_timer_panics_with_the_hosts_message() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        tokio::time::sleep(Duration::from_secs(5)).await;
    });
    host.run_until_stalled();
    let (id, _) = only_delay(&host);
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        host.complete(id, &quota_error(), b"");
        task.output()
    }))
    .expect_err("the sleep panics");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert_eq!(
        message,
        "the host refused a timer: module `m` is at its quota of 3 pending ops"
    );
}
