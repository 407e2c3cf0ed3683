//! The scheduler on host timers: ordering by deadline, deduplication (earliest wins),
//! debounce, holding, and the end of the request stream.

use super::support::*;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use kube_runtime_wasm::scheduler::{ScheduleRequest, debounced_scheduler, scheduler};
use kube_wasm_abi::OpId;
use kube_wasm_tokio::time::Instant;
use std::time::Duration;

type Requests = UnboundedSender<ScheduleRequest<&'static str>>;

fn describe_message(message: &&'static str) -> String {
    (*message).to_string()
}

/// A scheduler (debounced by `debounce`) fed by the returned sender, driven on the fake host.
fn start(debounce: Option<Duration>) -> (Driver, Requests) {
    let (host, _client) = setup();
    let (tx, rx) = unbounded();
    let d = match debounce {
        Some(debounce) => Driver::start(host, debounced_scheduler(rx, debounce), describe_message),
        None => Driver::start(host, scheduler(rx), describe_message),
    };
    (d, tx)
}

fn request(tx: &Requests, message: &'static str, after_millis: u64) {
    let run_at = Instant::now() + Duration::from_millis(after_millis);
    tx.unbounded_send(ScheduleRequest { message, run_at })
        .expect("the scheduler is running");
}

/// The next delay op, whose length must be `millis` (the fake host's clock is virtual).
fn expect_delay_of(d: &mut Driver, millis: u64) -> OpId {
    let (id, got) = d.expect_delay();
    assert_eq!(got, millis, "the delay asked of the host, in ms");
    id
}

#[test]
fn messages_come_out_in_deadline_order_on_one_timer() {
    let (mut d, tx) = start(None);
    request(&tx, "b", 2_000);
    request(&tx, "a", 1_000);
    request(&tx, "c", 3_000);
    // One timer, for the earliest deadline; the next is armed once it fires.
    let timer = expect_delay_of(&mut d, 1_000);
    assert!(d.nothing_pending());
    assert!(d.take_log().is_empty(), "nothing before the deadline");
    d.elapse(timer);
    assert_eq!(d.take_log(), ["a"]);
    // The clock is at 1 s now: `b` is 1 s away.
    let timer = expect_delay_of(&mut d, 1_000);
    d.elapse(timer);
    assert_eq!(d.take_log(), ["b"]);
    let timer = expect_delay_of(&mut d, 1_000);
    d.elapse(timer);
    assert_eq!(d.take_log(), ["c"]);
    assert!(d.nothing_pending(), "no timer while the queue is empty");
}

#[test]
fn past_deadlines_are_emitted_without_a_timer() {
    let (mut d, tx) = start(None);
    let run_at = Instant::now() - Duration::from_secs(1);
    tx.unbounded_send(ScheduleRequest {
        message: "a",
        run_at,
    })
    .expect("running");
    d.pump();
    assert_eq!(d.take_log(), ["a"]);
    assert!(d.nothing_pending());
}

#[test]
fn an_earlier_request_for_a_queued_message_wins_and_rearms_the_timer() {
    let (mut d, tx) = start(None);
    request(&tx, "a", 5_000);
    let late = expect_delay_of(&mut d, 5_000);
    request(&tx, "a", 1_000);
    let early = expect_delay_of(&mut d, 1_000);
    assert!(
        d.host.cancelled().contains(&late),
        "the later timer is cancelled"
    );
    d.elapse(early);
    assert_eq!(d.take_log(), ["a"]);
    assert!(d.nothing_pending(), "the message was queued once");
}

#[test]
fn a_later_request_for_a_queued_message_is_dropped() {
    let (mut d, tx) = start(None);
    request(&tx, "a", 1_000);
    request(&tx, "a", 5_000);
    request(&tx, "a", 2_000);
    let timer = expect_delay_of(&mut d, 1_000);
    assert!(d.nothing_pending(), "no timer for the later requests");
    d.elapse(timer);
    assert_eq!(d.take_log(), ["a"]);
    assert!(d.nothing_pending(), "emitted once");
}

#[test]
fn duplicates_are_emitted_once_and_distinct_messages_each() {
    let (mut d, tx) = start(None);
    // One deadline for all: the fake host's clock is the real one, so separately computed
    // deadlines would differ by a few nanoseconds (and need a timer each).
    let run_at = Instant::now() + Duration::from_millis(1_000);
    for message in ["a", "b", "a"] {
        tx.unbounded_send(ScheduleRequest { message, run_at })
            .expect("running");
    }
    let timer = expect_delay_of(&mut d, 1_000);
    d.elapse(timer);
    let mut log = d.take_log();
    log.sort();
    assert_eq!(log, ["a", "b"]);
    assert!(d.nothing_pending());
}

#[test]
fn debounce_delays_and_each_repeat_pushes_the_message_back() {
    let (mut d, tx) = start(Some(Duration::from_millis(1_000)));
    request(&tx, "a", 0);
    let first = expect_delay_of(&mut d, 1_000);
    // A repeat within the window restarts the wait (due at 1.4 s now).
    d.host.advance(Duration::from_millis(400));
    request(&tx, "a", 0);
    let second = expect_delay_of(&mut d, 1_000);
    assert!(d.host.cancelled().contains(&first));
    assert!(d.take_log().is_empty());
    d.elapse(second);
    assert_eq!(d.take_log(), ["a"]);
    assert!(d.nothing_pending());
    // Once emitted, the message can be scheduled again.
    request(&tx, "a", 0);
    let third = expect_delay_of(&mut d, 1_000);
    d.elapse(third);
    assert_eq!(d.take_log(), ["a"]);
}

#[test]
fn debounce_counts_from_the_last_repeat_in_virtual_time() {
    let (mut d, tx) = start(Some(Duration::from_millis(1_000)));
    request(&tx, "a", 0);
    d.pump();
    d.host.advance(Duration::from_millis(600));
    request(&tx, "a", 0);
    request(&tx, "b", 0);
    d.pump();
    // `a` is due 1 s after its repeat (1.6 s), `b` 1 s after its request.
    d.host.advance(Duration::from_millis(999));
    assert!(
        d.take_log().is_empty(),
        "nothing within the debounce period"
    );
    d.host.advance(Duration::from_millis(1));
    assert_eq!(sorted_log(&mut d), ["a", "b"]);
}

fn sorted_log(d: &mut Driver) -> Vec<String> {
    let mut log = d.take_log();
    log.sort();
    log
}

#[test]
fn debounce_adds_to_a_future_deadline() {
    let (mut d, tx) = start(Some(Duration::from_millis(500)));
    request(&tx, "a", 1_000);
    let timer = expect_delay_of(&mut d, 1_500);
    d.elapse(timer);
    assert_eq!(d.take_log(), ["a"]);
}

#[test]
fn the_scheduler_ends_with_its_requests() {
    let (mut d, tx) = start(None);
    request(&tx, "a", 1_000);
    let timer = expect_delay_of(&mut d, 1_000);
    drop(tx);
    d.pump();
    assert_eq!(d.take_log(), ["END"], "queued messages are dropped");
    assert!(d.host.cancelled().contains(&timer));
}
