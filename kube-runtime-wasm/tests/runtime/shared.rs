//! Shared stores (`unstable-runtime-subscribe`): subscribers of a reflector fed by a watcher
//! on the fake host, readiness, the bounded buffer's backpressure, and the controller's
//! `*_shared_stream` triggers.

use super::support::*;
use futures::Stream;
use futures::channel::mpsc;
use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube_runtime_wasm::WatchStreamExt;
use kube_runtime_wasm::controller::{Action, Controller, Error as ControllerError};
use kube_runtime_wasm::reflector::store::Writer;
use kube_runtime_wasm::reflector::{ObjectRef, ReflectHandle, Store, store, store_shared};
use kube_runtime_wasm::watcher::{self, Config, Event, watcher};
use kube_wasm_client::ResourceExt;
use kube_wasm_guest::fake::FakeHost;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

fn config_map(name: &str, rv: &str) -> ConfigMap {
    serde_json::from_value(cm(name, rv)).expect("a config map")
}

/// A subscriber's line for `obj`: `name@rv`, and whether the store held that very object
/// when the subscriber got it.
fn seen_in(reader: &Store<ConfigMap>) -> impl Fn(&Arc<ConfigMap>) -> String + 'static {
    let reader = reader.clone();
    move |obj| {
        let stored = reader
            .get(&ObjectRef::from_obj(obj.as_ref()))
            .is_some_and(|held| Arc::ptr_eq(&held, obj));
        let rv = obj.resource_version().unwrap_or_default();
        let where_ = if stored { "stored" } else { "NOT STORED" };
        format!("{}@{rv} {where_}", obj.name_any())
    }
}

/// Polls `stream` once, without a task to wake (as kube's tests do with `poll!`).
fn poll_once<S: Stream + Unpin>(stream: &mut S) -> Poll<Option<S::Item>> {
    Pin::new(stream).poll_next(&mut Context::from_waker(Waker::noop()))
}

/// The name of a polled item (`Apply(name)`), `pending` or `end`.
fn polled<T>(poll: Poll<Option<T>>, name: impl Fn(&T) -> String) -> String {
    match poll {
        Poll::Pending => "pending".to_string(),
        Poll::Ready(None) => "end".to_string(),
        Poll::Ready(Some(item)) => name(&item),
    }
}

fn root_item(item: &watcher::Result<Event<ConfigMap>>) -> String {
    describe(item)
}

fn object(obj: &Arc<ConfigMap>) -> String {
    obj.name_any()
}

#[test]
fn reflect_shared_feeds_every_subscriber_each_applied_object_once_stored() {
    let (host, client) = setup();
    let (reader, writer) = store_shared::<ConfigMap>(10);
    let first = writer.subscribe().expect("a shared store");
    let second = writer.subscribe().expect("a shared store");
    let root = watcher(configmaps(client), Config::default()).reflect_shared(writer);
    let mut d = Driver::start(host.clone(), root, describe);
    let first = spawn_logged(&host, first, seen_in(&reader));
    let second = spawn_logged(&host, second, seen_in(&reader));

    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[cm("a", "1"), cm("b", "2")], "10", None));
    // The completed listing: every object, to each subscriber.
    let listed = ["a@1 stored", "b@2 stored"];
    assert_eq!(take_sorted(&first), listed);
    assert_eq!(take_sorted(&second), listed);

    let (watch, _) = d.expect_watch();
    d.establish(watch);
    d.event(watch, &watch_event("MODIFIED", cm("a", "11")));
    d.event(watch, &watch_event("DELETED", cm("b", "12")));
    d.event(watch, &watch_event("ADDED", cm("c", "13")));
    d.event(watch, &error_event(500, "InternalError"));
    // Applied objects only: no deletion, no error.
    let applied = ["a@11 stored", "c@13 stored"];
    assert_eq!(take_sorted(&first), applied);
    assert_eq!(take_sorted(&second), applied);
    // The root stream passes every event on.
    assert_eq!(
        d.take_log(),
        [
            "Init",
            "InitApply(a)",
            "InitApply(b)",
            "InitDone",
            "Apply(a)",
            "Delete(b)",
            "Apply(c)",
            "Err WatchError 500",
        ]
    );
}

#[test]
fn a_subscriber_from_before_the_store_is_ready_gets_the_whole_first_listing() {
    let (host, _) = setup();
    let (tx, rx) = mpsc::unbounded();
    let (reader, writer) = store_shared::<ConfigMap>(10);
    let subscriber = writer.subscribe().expect("a shared store");
    let mut d = Driver::start(host.clone(), rx.reflect_shared(writer), root_item);
    let store = subscriber.reader();
    let seen = spawn_logged(&host, subscriber, move |obj: &Arc<ConfigMap>| {
        format!("{} of {}", obj.name_any(), store.len())
    });
    let mut ready = host.spawn(async move { reader.wait_until_ready().await.is_ok() });

    for event in [
        Event::Init,
        Event::InitApply(config_map("a", "1")),
        Event::InitApply(config_map("b", "1")),
    ] {
        tx.unbounded_send(Ok(event)).expect("open");
    }
    d.pump();
    assert!(seen.borrow().is_empty(), "nothing before InitDone");
    assert!(!ready.is_finished());

    tx.unbounded_send(Ok(Event::InitDone)).expect("open");
    d.pump();
    // Each listed object, with the whole listing already in the (now ready) store.
    assert_eq!(take_sorted(&seen), ["a of 2", "b of 2"]);
    assert_eq!(ready.output(), Some(true));
    assert_eq!(d.take_log().len(), 4);
}

#[test]
fn a_clone_of_a_subscriber_sees_what_its_original_has_not_read() {
    let (_, writer) = store_shared::<ConfigMap>(10);
    let mut early = writer.subscribe().expect("a shared store");
    let events = ["a", "b"].map(|name| Ok(Event::Apply(config_map(name, "1"))));
    let mut root = Box::pin(stream::iter(events).reflect_shared(writer));
    assert_eq!(polled(poll_once(&mut root), root_item), "Apply(a)");
    let mut before = early.clone();
    assert_eq!(polled(poll_once(&mut early), object), "a");
    let mut after = early.clone();
    assert_eq!(polled(poll_once(&mut root), root_item), "Apply(b)");
    assert_eq!(polled(poll_once(&mut before), object), "a");
    assert_eq!(polled(poll_once(&mut before), object), "b");
    assert_eq!(polled(poll_once(&mut after), object), "b");
    assert_eq!(polled(poll_once(&mut early), object), "b");
    assert_eq!(polled(poll_once(&mut after), object), "pending");
}

#[test]
fn a_full_buffer_holds_the_root_stream_until_the_slowest_subscriber_reads() {
    // kube's `reflect_applies_backpressure`, with a buffer of one object.
    let (reader, writer) = store_shared::<ConfigMap>(1);
    let mut fast = writer.subscribe().expect("a shared store");
    let mut slow = writer.subscribe().expect("a shared store");
    let events = ["a", "b", "c"].map(|name| Ok(Event::Apply(config_map(name, "1"))));
    let mut root = Box::pin(stream::iter(events).reflect_shared(writer));
    let mut root = move || polled(poll_once(&mut root), root_item);

    assert_eq!(polled(poll_once(&mut fast), object), "pending");
    assert_eq!(polled(poll_once(&mut slow), object), "pending");
    // One object fits in the buffer even though `slow` has not read it.
    assert_eq!(root(), "Apply(a)");
    assert_eq!(polled(poll_once(&mut fast), object), "a");
    // `b` is stored, but the full buffer holds the root stream and `fast` gets nothing.
    assert_eq!(root(), "pending");
    assert!(reader.get(&ObjectRef::new("b").within("default")).is_some());
    assert_eq!(polled(poll_once(&mut fast), object), "pending");
    // `slow` reading `a` frees the slot: `b` goes out, then the same again for `c`.
    assert_eq!(polled(poll_once(&mut slow), object), "a");
    assert_eq!(root(), "Apply(b)");
    assert_eq!(polled(poll_once(&mut fast), object), "b");
    assert_eq!(root(), "pending");
    assert_eq!(polled(poll_once(&mut slow), object), "b");
    assert_eq!(root(), "Apply(c)");
    // The root stream ends; subscribers get what was sent, then end too.
    assert_eq!(root(), "end");
    for subscriber in [&mut fast, &mut slow] {
        assert_eq!(polled(poll_once(subscriber), object), "c");
        assert_eq!(polled(poll_once(subscriber), object), "end");
    }
}

#[test]
fn dropping_the_slow_subscriber_releases_the_root_stream() {
    let (_, writer) = store_shared::<ConfigMap>(1);
    let mut fast = writer.subscribe().expect("a shared store");
    let slow = writer.subscribe().expect("a shared store");
    let events = ["a", "b"].map(|name| Ok(Event::Apply(config_map(name, "1"))));
    let mut root = Box::pin(stream::iter(events).reflect_shared(writer));
    let mut root = move || polled(poll_once(&mut root), root_item);
    assert_eq!(root(), "Apply(a)");
    assert_eq!(polled(poll_once(&mut fast), object), "a");
    assert_eq!(root(), "pending");
    drop(slow);
    assert_eq!(root(), "Apply(b)");
    assert_eq!(polled(poll_once(&mut fast), object), "b");
}

#[test]
fn without_subscribers_the_root_stream_never_waits() {
    let (reader, writer) = store_shared::<ConfigMap>(1);
    let events = ["a", "b", "c"].map(|name| Ok(Event::Apply(config_map(name, "1"))));
    let mut root = Box::pin(stream::iter(events).reflect_shared(writer));
    for name in ["a", "b", "c"] {
        assert_eq!(
            polled(poll_once(&mut root), root_item),
            format!("Apply({name})")
        );
    }
    assert_eq!(polled(poll_once(&mut root), root_item), "end");
    assert_eq!(reader.len(), 3);
}

#[test]
fn only_a_shared_writer_can_be_subscribed_to() {
    let (_, writer) = store::<ConfigMap>();
    assert!(writer.subscribe().is_none());
    assert!(Writer::<ConfigMap>::new(()).subscribe().is_none());
    assert!(Writer::<ConfigMap>::default().subscribe().is_none());
    assert!(Writer::<ConfigMap>::new_shared(4, ()).subscribe().is_some());
}

#[test]
fn handles_and_shared_streams_are_send() {
    fn send<T: Send + 'static>(_: &T) {}
    let (_, writer) = store_shared::<ConfigMap>(1);
    let handle: ReflectHandle<ConfigMap> = writer.subscribe().expect("a shared store");
    send(&handle);
    send(&stream::empty::<watcher::Result<Event<ConfigMap>>>().reflect_shared(writer));
}

// The controller over shared streams.

/// What the reconciler saw: `name`s, in order.
type Seen = Mutex<Vec<String>>;

async fn reconcile(obj: Arc<ConfigMap>, seen: Arc<Seen>) -> Result<Action, Infallible> {
    seen.lock().expect("not poisoned").push(obj.name_any());
    Ok(Action::await_change())
}

fn error_policy(_: Arc<ConfigMap>, _: &Infallible, _: Arc<Seen>) -> Action {
    Action::await_change()
}

fn take_seen(seen: &Seen) -> Vec<String> {
    let mut names = std::mem::take(&mut *seen.lock().expect("not poisoned"));
    names.sort();
    names
}

type Item = Result<(ObjectRef<ConfigMap>, Action), ControllerError<Infallible, watcher::Error>>;

/// A reconciled object's full reference (`Kind.version.group/name.namespace`).
fn reconciled(item: &Item) -> String {
    match item {
        Ok((obj_ref, _)) => obj_ref.to_string(),
        Err(err) => format!("error {err}"),
    }
}

type Sender<K> = mpsc::UnboundedSender<watcher::Result<Event<K>>>;

/// A shared store of `K` fed by events the test sends, its root stream driven by its own
/// task on `host`; returns the sender, a reader and a subscriber.
fn shared_source<K>(host: &FakeHost) -> (Sender<K>, Store<K>, ReflectHandle<K>)
where
    K: kube_wasm_client::Resource<DynamicType = ()> + Clone + 'static,
{
    let (tx, rx) = mpsc::unbounded();
    let (reader, writer) = store_shared::<K>(16);
    let subscriber = writer.subscribe().expect("a shared store");
    let root = rx.reflect_shared(writer);
    spawn_logged(host, root.map(|_| ()), |()| String::new());
    (tx, reader, subscriber)
}

/// Sends a complete listing of config maps `names` (at resourceVersion 1).
fn list(tx: &Sender<ConfigMap>, names: &[&str]) {
    let listing = names
        .iter()
        .map(|name| Event::InitApply(config_map(name, "1")));
    for event in std::iter::once(Event::Init)
        .chain(listing)
        .chain([Event::InitDone])
    {
        tx.unbounded_send(Ok(event)).expect("open");
    }
}

fn secret(value: Value) -> Secret {
    serde_json::from_value(value).expect("a secret")
}

#[test]
fn for_shared_stream_reconciles_each_object_of_the_subscription() {
    let (host, _) = setup();
    let (tx, reader, subscriber) = shared_source::<ConfigMap>(&host);
    let seen = Arc::new(Seen::default());
    let controller = Controller::for_shared_stream(subscriber, reader);
    let run = controller.run(reconcile, error_policy, seen.clone());
    let mut d = Driver::start(host, run, reconciled);
    list(&tx, &["a", "b"]);
    d.pump();
    assert_eq!(take_seen(&seen), ["a", "b"]);
    tx.unbounded_send(Ok(Event::Apply(config_map("a", "2"))))
        .expect("open");
    tx.unbounded_send(Ok(Event::Delete(config_map("b", "3"))))
        .expect("open");
    d.pump();
    assert_eq!(take_seen(&seen), ["a"], "a change, not a deletion");
    let mut log = d.take_log();
    log.sort();
    assert_eq!(
        log,
        [
            "ConfigMap.v1./a.default",
            "ConfigMap.v1./a.default",
            "ConfigMap.v1./b.default"
        ]
    );
}

fn owned_secret(name: &str, owner_kind: &str, owner: &str) -> Secret {
    secret(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": "1",
                     "ownerReferences": [{"apiVersion": "v1", "kind": owner_kind,
                                          "name": owner, "uid": "u1"}]}}))
}

#[test]
fn owns_shared_stream_reconciles_the_owner_of_each_child() {
    let (host, _) = setup();
    let (main_tx, reader, subscriber) = shared_source::<ConfigMap>(&host);
    let (child_tx, _, children) = shared_source::<Secret>(&host);
    let seen = Arc::new(Seen::default());
    let controller = Controller::for_shared_stream(subscriber, reader).owns_shared_stream(children);
    let run = controller.run(reconcile, error_policy, seen.clone());
    let mut d = Driver::start(host, run, reconciled);
    list(&main_tx, &["a", "b"]);
    d.pump();
    take_seen(&seen);
    d.take_log();
    for child in [
        owned_secret("s", "ConfigMap", "b"),
        owned_secret("t", "Deployment", "a"),
    ] {
        child_tx
            .unbounded_send(Ok(Event::Apply(child)))
            .expect("open");
    }
    d.pump();
    // Only the config-map owner, found in the child's namespace.
    assert_eq!(take_seen(&seen), ["b"]);
    assert_eq!(d.take_log(), ["ConfigMap.v1./b.default"]);
}

#[test]
fn watches_shared_stream_reconciles_what_the_mapper_names() {
    let (host, _) = setup();
    let (main_tx, reader, subscriber) = shared_source::<ConfigMap>(&host);
    let (other_tx, _, others) = shared_source::<Secret>(&host);
    let seen = Arc::new(Seen::default());
    let controller = Controller::for_shared_stream(subscriber, reader).watches_shared_stream(
        others,
        |secret: Arc<Secret>| {
            secret
                .labels()
                .get("for")
                .map(|name| ObjectRef::new(name).within("default"))
        },
    );
    let run = controller.run(reconcile, error_policy, seen.clone());
    let mut d = Driver::start(host, run, reconciled);
    list(&main_tx, &["a", "b"]);
    d.pump();
    take_seen(&seen);
    d.take_log();
    let labelled = |name: &str, target: &str| {
        secret(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name,
            "namespace": "default", "resourceVersion": "1", "labels": {"for": target}}}),
        )
    };
    for other in [labelled("s", "a"), labelled("t", "missing")] {
        other_tx
            .unbounded_send(Ok(Event::Apply(other)))
            .expect("open");
    }
    d.pump();
    assert_eq!(take_seen(&seen), ["a"]);
    let mut log = d.take_log();
    log.sort();
    assert_eq!(
        log,
        [
            "ConfigMap.v1./a.default",
            "error tried to reconcile object ConfigMap.v1./missing.default that was not found in local store"
        ]
    );
}

#[test]
fn reflect_fills_a_shared_store_without_telling_its_subscribers() {
    // As kube's `reflect`: only `reflect_shared` (or `reflector`) sends to subscribers.
    let (reader, writer) = store_shared::<ConfigMap>(1);
    let mut subscriber = writer.subscribe().expect("a shared store");
    let events = ["a", "b"].map(|name| Ok(Event::Apply(config_map(name, "1"))));
    let mut root = Box::pin(stream::iter(events).reflect(writer));
    assert_eq!(polled(poll_once(&mut root), root_item), "Apply(a)");
    assert_eq!(polled(poll_once(&mut root), root_item), "Apply(b)");
    assert_eq!(reader.len(), 2);
    assert_eq!(polled(poll_once(&mut subscriber), object), "pending");
    assert_eq!(polled(poll_once(&mut root), root_item), "end");
    drop(root);
    assert_eq!(polled(poll_once(&mut subscriber), object), "end");
}
