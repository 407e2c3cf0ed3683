//! Stream combinators on plain streams of watcher events (no host needed).

use super::support::*;
use futures::{FutureExt, StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_runtime_wasm::watcher::{Error, Event};
use kube_runtime_wasm::{PredicateConfig, WatchStreamExt, predicates};
use kube_wasm_client::ResourceExt;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

fn object(name: &str, rv: &str, generation: i64) -> ConfigMap {
    let mut value = cm(name, rv);
    value["metadata"]["generation"] = generation.into();
    serde_json::from_value(value).expect("a config map")
}

fn events() -> Vec<Result<Event<ConfigMap>, Error>> {
    vec![
        Ok(Event::Init),
        Ok(Event::InitApply(object("a", "1", 1))),
        Ok(Event::InitDone),
        Ok(Event::Apply(object("b", "2", 1))),
        Err(Error::NoResourceVersion),
        Ok(Event::Delete(object("a", "3", 1))),
    ]
}

/// Collects a stream that never waits.
fn collect<S: futures::Stream>(s: S) -> Vec<S::Item> {
    s.collect::<Vec<_>>()
        .now_or_never()
        .expect("the stream is ready")
}

#[test]
fn applied_objects_skip_markers_and_deletions() {
    let out = collect(stream::iter(events()).applied_objects());
    let out: Vec<_> = out.iter().map(describe_object).collect();
    assert_eq!(out, ["a@1", "b@2", "Err NoResourceVersion"]);
}

#[test]
fn touched_objects_keep_deletions() {
    let out = collect(stream::iter(events()).touched_objects());
    let out: Vec<_> = out.iter().map(describe_object).collect();
    assert_eq!(out, ["a@1", "b@2", "Err NoResourceVersion", "a@3"]);
}

#[test]
fn modify_changes_every_object() {
    let out = collect(stream::iter(events()).modify(|o: &mut ConfigMap| {
        o.labels_mut().insert("seen".into(), "yes".into());
    }));
    let labelled = out
        .iter()
        .filter_map(|e| match e {
            Ok(Event::Apply(o) | Event::InitApply(o) | Event::Delete(o)) => Some(o),
            _ => None,
        })
        .filter(|o| o.labels().get("seen").map(String::as_str) == Some("yes"))
        .count();
    assert_eq!(labelled, 3);
    assert_eq!(out.len(), 6);
}

#[test]
fn predicate_filter_drops_unchanged_generations() {
    let objects = vec![
        Ok(object("a", "1", 1)),
        Ok(object("a", "2", 1)), // status change: same generation
        Ok(object("b", "3", 1)), // another object
        Ok(object("a", "4", 2)), // spec change
        Err(Error::NoResourceVersion),
        Ok(object("a", "5", 2)),
    ];
    let out = collect(
        stream::iter(objects).predicate_filter(predicates::generation, PredicateConfig::default()),
    );
    let out: Vec<_> = out.iter().map(describe_object).collect();
    assert_eq!(out, ["a@1", "b@3", "a@4", "Err NoResourceVersion"]);
}

#[test]
fn predicates_without_a_value_always_pass_and_fallback_is_used() {
    let mut no_generation = object("a", "1", 1);
    no_generation.metadata.generation = None;
    let mut later = no_generation.clone();
    later.metadata.resource_version = Some("2".into());
    let objects = vec![no_generation.clone(), no_generation, later];
    let only_generation = collect(
        stream::iter(objects.clone().into_iter().map(Ok))
            .predicate_filter(predicates::generation, PredicateConfig::default()),
    );
    assert_eq!(only_generation.len(), 3);
    use kube_runtime_wasm::Predicate;
    let with_fallback = collect(stream::iter(objects.into_iter().map(Ok)).predicate_filter(
        predicates::generation.fallback(predicates::resource_version),
        PredicateConfig::default(),
    ));
    let out: Vec<_> = with_fallback.iter().map(describe_object).collect();
    assert_eq!(out, ["a@1", "a@2"]);
}

#[test]
fn predicate_filter_forgets_objects_not_seen_for_the_ttl() {
    let (host, _) = setup();
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let config = PredicateConfig::default().ttl(Duration::from_secs(60));
    let passed = Rc::new(RefCell::new(Vec::new()));
    let seen = passed.clone();
    let filtered = rx.predicate_filter(predicates::generation, config);
    drop(host.spawn(async move {
        let mut filtered = std::pin::pin!(filtered);
        while let Some(item) = filtered.next().await {
            seen.borrow_mut().push(describe_object(&item));
        }
    }));
    let send = |name: &str, rv: &str| {
        tx.unbounded_send(Ok(object(name, rv, 1)))
            .expect("receiver alive");
        host.run_until_stalled();
    };
    send("a", "1");
    send("b", "2");
    host.advance(Duration::from_secs(59));
    send("a", "3"); // same generation within the TTL: filtered, and `a` counts as seen now
    host.advance(Duration::from_secs(2));
    // `b` was last seen 61 s ago: evicted, so its unchanged generation passes again; `a`
    // was seen 2 s ago and stays filtered.
    send("b", "4");
    send("a", "5");
    assert_eq!(*passed.borrow(), ["a@1", "b@2", "b@4"]);
}

#[test]
fn a_cancelable_join_handle_yields_the_output_and_aborts_on_drop() {
    use kube_runtime_wasm::utils::CancelableJoinHandle;
    use kube_wasm_tokio::runtime::Handle;
    let (host, _) = setup();
    let mut joined = host.spawn(async {
        let handle = CancelableJoinHandle::spawn(async { 7 }, &Handle::current());
        handle.await
    });
    host.run_until_stalled();
    assert_eq!(joined.output(), Some(7));

    let finished = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = finished.clone();
    let mut dropper = host.spawn(async move {
        let handle = CancelableJoinHandle::spawn(
            async move {
                kube_wasm_tokio::time::sleep(Duration::from_secs(1)).await;
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            },
            &Handle::current(),
        );
        drop(handle);
    });
    host.run_until_stalled();
    assert_eq!(dropper.output(), Some(()));
    host.advance(Duration::from_secs(2));
    assert!(
        !finished.load(std::sync::atomic::Ordering::SeqCst),
        "the task was aborted with its handle"
    );
    assert!(host.live().is_empty(), "and its timer cancelled");
}
