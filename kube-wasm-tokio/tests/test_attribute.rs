//! `#[tokio::test]` runs its body on the guest executor, against a fresh fake host.

extern crate kube_wasm_tokio as tokio;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

#[tokio::test]
async fn a_body_runs_to_completion() {
    let done = Rc::new(Cell::new(false));
    let flag = done.clone();
    let task = tokio::spawn(async { 6 * 7 });
    tokio::task::spawn_local(async move { flag.set(true) })
        .await
        .unwrap();
    assert_eq!(task.await.unwrap(), 42);
    assert!(done.get());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn timers_auto_advance_on_the_virtual_clock() {
    let start = tokio::time::Instant::now();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        let _ = tx.send("late");
    });
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    assert_eq!(rx.await, Ok("late"));
    assert_eq!(start.elapsed(), Duration::from_secs(30));
    let timed_out = tokio::time::timeout(Duration::from_secs(1), std::future::pending::<()>());
    assert!(timed_out.await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_thread_runs_on_the_one_executor() -> Result<(), Box<dyn std::error::Error>> {
    let value = tokio::spawn(async { "ok" }).await?;
    assert_eq!(value, "ok");
    Ok(())
}

#[tokio::test(crate = "tokio")]
async fn crate_path_is_honoured() {
    tokio::task::yield_now().await;
}

#[tokio::test]
#[should_panic(expected = "boom")]
async fn a_panic_in_the_body_fails_the_test() {
    tokio::task::yield_now().await;
    panic!("boom");
}

#[tokio::test]
#[should_panic(expected = "`waiting_forever_fails_instead_of_hanging` cannot finish")]
async fn waiting_forever_fails_instead_of_hanging() {
    let (_tx, rx) = tokio::sync::oneshot::channel::<()>();
    let _ = rx.await;
}
