//! The executor, reactor and op lifecycle, driven by the fake host.

use futures::StreamExt;
use kube_wasm_abi::{Completion, ErrorCode, HttpRequest, OpError, ResponseMode};
use kube_wasm_guest::Op;
use kube_wasm_guest::fake::{FakeHost, Submitted};
use std::cell::RefCell;
use std::rc::Rc;

fn delay_ids(host: &FakeHost) -> Vec<u64> {
    host.take_submitted()
        .into_iter()
        .map(|s| match s {
            Submitted::Delay { id, .. } => id,
            other => panic!("unexpected op {other:?}"),
        })
        .collect()
}

#[test]
fn tasks_wake_in_completion_order() {
    let host = FakeHost::install();
    let log = Rc::new(RefCell::new(Vec::new()));
    for name in ["a", "b", "c"] {
        let log = log.clone();
        drop(host.spawn(async move {
            let mut op = Op::delay(10);
            op.next().await;
            log.borrow_mut().push(name);
        }));
    }
    host.run_until_stalled();
    let ids = delay_ids(&host);
    assert_eq!(ids.len(), 3);
    assert!(
        log.borrow().is_empty(),
        "nothing completes before the host answers"
    );
    host.complete(ids[2], &Completion::Elapsed {}, b"");
    host.complete(ids[0], &Completion::Elapsed {}, b"");
    host.complete(ids[1], &Completion::Elapsed {}, b"");
    assert_eq!(*log.borrow(), vec!["c", "a", "b"]);
}

#[test]
fn ready_tasks_run_fifo_within_one_entry() {
    let host = FakeHost::install();
    let log = Rc::new(RefCell::new(Vec::new()));
    for i in 0..4 {
        let log = log.clone();
        drop(host.spawn(async move { log.borrow_mut().push(i) }));
    }
    host.run_until_stalled();
    assert_eq!(*log.borrow(), vec![0, 1, 2, 3]);
}

#[test]
fn completions_queue_in_order_and_none_is_lost() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let mut op = Op::watch(&kube_wasm_abi::WatchRequest {
            path: "/api/v1/configmaps".into(),
            label_selector: None,
            field_selector: None,
            timeout_seconds: None,
            bookmarks: true,
            send_initial_events: false,
            resource_version: "0".into(),
            metadata_only: false,
        });
        let mut seen = Vec::new();
        while let Some(d) = op.next().await {
            seen.push((d.completion.clone(), d.into_body()));
        }
        seen
    });
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    // Deliver several completions without the guest polling in between: the fake host runs
    // the executor after each, but the raw reactor path is what matters — each is queued.
    for i in 0..5 {
        host.complete(
            id,
            &Completion::WatchEvent {},
            format!("event-{i}").as_bytes(),
        );
    }
    host.complete(id, &Completion::End {}, b"");
    // Anything after the final completion is dropped.
    host.complete(id, &Completion::WatchEvent {}, b"late");
    let seen = task.output().expect("stream ended");
    let bodies: Vec<_> = seen
        .iter()
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert_eq!(
        bodies,
        vec!["event-0", "event-1", "event-2", "event-3", "event-4", ""]
    );
    assert_eq!(
        seen.last().map(|(c, _)| c.clone()),
        Some(Completion::End {})
    );
}

#[test]
fn completions_delivered_before_a_poll_all_queue() {
    let host = FakeHost::install();
    let mut op = Op::delay(1);
    let id = op.id();
    // Deliver through the raw entry path without any task waiting.
    kube_wasm_guest::entry::complete(
        id,
        kube_wasm_abi::encode_frame(&Completion::Line {}, b"one"),
    );
    kube_wasm_guest::entry::complete(
        id,
        kube_wasm_abi::encode_frame(&Completion::Line {}, b"two"),
    );
    let mut task = host.spawn(async move {
        let mut got = Vec::new();
        while let Some(d) = op.next().await {
            got.push(d.into_body());
            if got.len() == 2 {
                break;
            }
        }
        got
    });
    host.run_until_stalled();
    assert_eq!(task.output(), Some(vec![b"one".to_vec(), b"two".to_vec()]));
}

#[test]
fn dropping_an_unfinished_op_cancels_it_on_the_host() {
    let host = FakeHost::install();
    let op = Op::delay(1000);
    let id = op.id();
    assert_eq!(host.live(), vec![id]);
    drop(op);
    assert_eq!(host.cancelled(), vec![id]);
    assert!(host.live().is_empty());
    // A late completion for the dropped op is ignored, not a panic.
    host.complete(id, &Completion::Elapsed {}, b"");
    assert_eq!(kube_wasm_guest::reactor::tracked_ops(), 0);
}

#[test]
fn dropping_a_finished_op_does_not_cancel() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let mut op = Op::delay(1);
        op.next().await.map(|d| d.completion)
    });
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    host.complete(id, &Completion::Elapsed {}, b"");
    assert_eq!(task.output(), Some(Some(Completion::Elapsed {})));
    assert!(host.cancelled().is_empty());
}

#[test]
fn aborting_a_task_drops_its_future_and_cancels_its_ops() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let mut op = Op::delay(60_000);
        op.next().await;
        "finished"
    });
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    assert!(!task.is_finished());
    task.abort();
    host.run_until_stalled();
    assert!(task.is_finished());
    assert_eq!(task.output(), None, "an aborted task has no output");
    assert_eq!(host.cancelled(), vec![id]);
}

#[test]
fn join_handle_yields_output_or_cancellation() {
    let host = FakeHost::install();
    let mut outer = host.spawn(async {
        let quick = kube_wasm_guest::spawn_local(async { 7 });
        let slow = kube_wasm_guest::spawn_local(async {
            Op::delay(1_000).next().await;
        });
        slow.abort();
        let slow = slow.await;
        (
            quick.await.ok(),
            slow.map_err(|e| (e.is_cancelled(), e.to_string())).err(),
        )
    });
    host.run_until_stalled();
    let (quick, slow) = outer.output().expect("outer finished");
    assert_eq!(quick, Some(7));
    let (cancelled, message) = slow.expect("slow task was aborted");
    assert!(cancelled);
    assert!(message.contains("cancelled"), "{message}");
}

#[test]
fn malformed_completion_becomes_an_error_value() {
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let mut op = Op::http(
            &HttpRequest {
                method: "GET".into(),
                uri: "/version".into(),
                headers: vec![],
                response: ResponseMode::Whole,
            },
            b"",
        );
        op.next().await.map(|d| d.completion)
    });
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    host.complete_raw(id, vec![0xff, 0xff], true);
    match task.output() {
        Some(Some(Completion::Error(OpError {
            code: ErrorCode::Internal,
            message,
            ..
        }))) => {
            assert!(message.contains("malformed"), "{message}")
        }
        other => panic!("expected an internal error, got {other:?}"),
    }
}

#[test]
fn root_task_sets_exit_status_when_main_returns() {
    let host = FakeHost::install();
    host.run_main(async {
        Op::delay(5).next().await;
        3
    });
    assert_eq!(host.exit_status(), None);
    let id = host.take_submitted()[0].id();
    host.complete(id, &Completion::Elapsed {}, b"");
    assert_eq!(host.exit_status(), Some(3));
}

#[test]
fn http_envelope_reaches_the_host_intact() {
    let host = FakeHost::install();
    let req = HttpRequest {
        method: "POST".into(),
        uri: "/api/v1/namespaces/x/configmaps".into(),
        headers: vec![("content-type".into(), "application/json".into())],
        response: ResponseMode::Whole,
    };
    let _op = Op::http(&req, b"{\"a\":1}");
    match &host.take_submitted()[..] {
        [Submitted::Http { request, body, .. }] => {
            assert_eq!(request, &req);
            assert_eq!(body, b"{\"a\":1}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_thread_ending_with_ops_in_flight_tears_down_quietly() {
    let joined = std::thread::spawn(|| {
        let host = FakeHost::install();
        drop(host.spawn(async {
            Op::delay(60_000).next().await;
        }));
        host.run_until_stalled();
        assert_eq!(host.live().len(), 1);
        // The thread ends here with the task and its op still alive.
    })
    .join();
    assert!(joined.is_ok(), "thread teardown panicked");
}

#[test]
fn a_root_task_blocked_with_no_op_parks_on_a_delay_that_never_fires() {
    let host = FakeHost::install();
    // A receiver whose sender lives on but never sends: nothing can wake the root task.
    let (sender, receiver) = futures::channel::oneshot::channel::<i32>();
    host.run_main(async move { receiver.await.unwrap_or(9) });
    match &host.take_submitted()[..] {
        [Submitted::Delay { millis, .. }] => assert_eq!(*millis, i64::MAX as u64),
        other => panic!("expected one parking delay, got {other:?}"),
    }
    assert_eq!(host.exit_status(), None);
    assert_eq!(host.live().len(), 1, "the parking op stays live");
    drop(sender);
}

#[test]
fn a_root_task_parks_only_once_nothing_is_pending_and_a_finished_one_never() {
    let host = FakeHost::install();
    let (sender, receiver) = futures::channel::oneshot::channel::<i32>();
    host.run_main(async move {
        Op::delay(5).next().await;
        receiver.await.unwrap_or(9)
    });
    let [Submitted::Delay { id, millis: 5 }] = host.take_submitted()[..] else {
        panic!("expected the task's own delay");
    };
    host.complete(id, &Completion::Elapsed {}, b"");
    assert!(
        matches!(&host.take_submitted()[..], [Submitted::Delay { millis, .. }] if *millis == i64::MAX as u64),
        "parks once its own op has finished"
    );
    drop(sender);

    let host = FakeHost::install();
    host.run_main(async { 0 });
    assert_eq!(host.exit_status(), Some(0));
    assert!(
        host.take_submitted().is_empty(),
        "a finished main does not park"
    );
}
