//! The fake host's virtual clock: it moves only when the test advances it or completes a
//! delay, and `advance` fires every delay due on the way, in deadline order.

use futures::StreamExt;
use kube_wasm_abi::Completion;
use kube_wasm_guest::Op;
use kube_wasm_guest::clock;
use kube_wasm_guest::fake::FakeHost;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

type Log = Rc<RefCell<Vec<(u64, Duration)>>>;

/// Spawns a task that waits `millis` on a host delay, then logs `(millis, clock since start)`.
fn wait_and_log(host: &FakeHost, millis: u64, log: &Log, start: Instant) {
    let log = log.clone();
    // The handle is not needed: the log shows when the task ran.
    drop(host.spawn(async move {
        Op::delay(millis).next().await;
        log.borrow_mut().push((millis, clock::now() - start));
    }));
}

#[test]
fn the_clock_stands_still_until_the_test_moves_it() {
    let host = FakeHost::install();
    let start = clock::now();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(clock::now(), start);
    assert_eq!(host.now(), start);
    assert_eq!(host.elapsed(), Duration::ZERO);
    host.advance(Duration::from_millis(1500));
    assert_eq!(clock::now() - start, Duration::from_millis(1500));
}

#[test]
fn advance_fires_due_delays_in_deadline_order() {
    let host = FakeHost::install();
    let start = clock::now();
    let log = Log::default();
    for millis in [30, 10, 20] {
        wait_and_log(&host, millis, &log, start);
    }
    host.run_until_stalled();
    assert_eq!(host.next_timer(), Some(Duration::from_millis(10)));

    let fired = host.advance(Duration::from_millis(25));
    assert_eq!(fired.len(), 2);
    assert_eq!(
        *log.borrow(),
        [
            (10, Duration::from_millis(10)),
            (20, Duration::from_millis(20))
        ],
        "each task saw the clock at its own deadline"
    );
    assert_eq!(host.elapsed(), Duration::from_millis(25));
    assert_eq!(host.next_timer(), Some(Duration::from_millis(5)));

    assert_eq!(host.advance_to_next_timer(), Some(Duration::from_millis(5)));
    assert_eq!(log.borrow().last(), Some(&(30, Duration::from_millis(30))));
    assert_eq!(host.next_timer(), None);
    assert_eq!(host.advance_to_next_timer(), None);
    assert!(host.live().is_empty());
}

#[test]
fn delays_started_while_advancing_fire_if_due_before_the_end() {
    let host = FakeHost::install();
    let ticks = Rc::new(RefCell::new(Vec::new()));
    let seen = ticks.clone();
    let start = clock::now();
    drop(host.spawn(async move {
        loop {
            Op::delay(10).next().await;
            seen.borrow_mut().push(clock::now() - start);
        }
    }));
    host.run_until_stalled();
    host.advance(Duration::from_millis(35));
    assert_eq!(
        *ticks.borrow(),
        [10, 20, 30].map(Duration::from_millis),
        "three 10 ms delays in a row, each started when the previous fired"
    );
    assert_eq!(host.next_timer(), Some(Duration::from_millis(5)));
}

#[test]
fn completing_a_delay_by_hand_moves_the_clock_to_its_deadline() {
    let host = FakeHost::install();
    let start = clock::now();
    let log = Log::default();
    wait_and_log(&host, 400, &log, start);
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    host.complete(id, &Completion::Elapsed {}, b"");
    assert_eq!(*log.borrow(), [(400, Duration::from_millis(400))]);
    // An earlier deadline never moves the clock back.
    wait_and_log(&host, 1, &log, start);
    host.run_until_stalled();
    host.advance(Duration::from_millis(100));
    assert_eq!(log.borrow()[1], (1, Duration::from_millis(401)));
    assert_eq!(host.elapsed(), Duration::from_millis(500));
}

#[test]
fn a_cancelled_delay_never_fires() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let early = Op::delay(10);
        drop(Op::delay(5));
        let mut early = early;
        early.next().await.map(|d| d.completion)
    });
    host.run_until_stalled();
    assert_eq!(host.cancelled().len(), 1);
    assert_eq!(host.next_timer(), Some(Duration::from_millis(10)));
    let fired = host.advance(Duration::from_millis(20));
    assert_eq!(fired.len(), 1, "only the live delay fired");
    assert_eq!(task.output(), Some(Some(Completion::Elapsed {})));
}
