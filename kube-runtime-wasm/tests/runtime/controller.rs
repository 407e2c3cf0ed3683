//! The controller on the fake host: reconciling on watch events, requeues and error-policy
//! retries on host timers, owned objects triggering their owner, per-object serialisation,
//! the concurrency limit, and shutdown.

use super::support::*;
use futures::channel::{mpsc, oneshot};
use futures::{FutureExt, Stream, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube_runtime_wasm::WatchStreamExt;
use kube_runtime_wasm::controller::{
    Action, Config as ControllerConfig, Controller, Error as ControllerError, applier,
};
use kube_runtime_wasm::reflector::{self, ObjectRef, reflector};
use kube_runtime_wasm::watcher::{self, Config, Event};
use kube_wasm_abi::{Completion, OpId};
use kube_wasm_client::{Api, ResourceExt};
use kube_wasm_guest::fake::Submitted;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a reconciliation works (a host timer), when it does.
const WORK_MILLIS: u64 = 100;

#[derive(Debug)]
struct Failed;

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("reconcile failed")
    }
}

impl std::error::Error for Failed {}

/// What the test reconciler does, and what it saw.
#[derive(Default)]
struct Ctx {
    /// Wait `WORK_MILLIS` on a host timer before finishing.
    work: bool,
    /// Fail (and let the error policy requeue after `policy_requeue`).
    fail: bool,
    /// The reconciler's action.
    action: Option<Duration>,
    policy_requeue: Option<Duration>,
    seen: Mutex<Vec<String>>,
}

impl Ctx {
    fn note(&self, line: String) {
        self.seen.lock().expect("not poisoned").push(line);
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.seen.lock().expect("not poisoned"))
    }
}

async fn reconcile(obj: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Failed> {
    let name = obj.name_any();
    ctx.note(format!("start {name}"));
    if ctx.work {
        kube_wasm_tokio::time::sleep(Duration::from_millis(WORK_MILLIS)).await;
        ctx.note(format!("end {name}"));
    }
    if ctx.fail {
        return Err(Failed);
    }
    Ok(ctx
        .action
        .map_or_else(Action::await_change, Action::requeue))
}

fn error_policy(obj: Arc<ConfigMap>, _: &Failed, ctx: Arc<Ctx>) -> Action {
    ctx.note(format!("policy {}", obj.name_any()));
    ctx.policy_requeue
        .map_or_else(Action::await_change, Action::requeue)
}

type Item = Result<(ObjectRef<ConfigMap>, Action), ControllerError<Failed, watcher::Error>>;

fn describe_item(item: &Item) -> String {
    match item {
        Ok((obj_ref, _)) => format!("ok {}", obj_ref.name),
        Err(ControllerError::ReconcilerFailed(_, obj_ref)) => format!("failed {}", obj_ref.name),
        Err(ControllerError::ObjectNotFound(obj_ref)) => format!("not found {}", obj_ref.name),
        Err(ControllerError::QueueError(_)) => "queue error".to_string(),
        Err(ControllerError::RunnerError(_)) => "runner error".to_string(),
    }
}

fn config_map(name: &str, rv: &str) -> ConfigMap {
    serde_json::from_value(cm(name, rv)).expect("a config map")
}

type Events = mpsc::UnboundedSender<Result<Event<ConfigMap>, watcher::Error>>;

/// A controller over a stream of watcher events the test sends (already listed: `a`, `b`).
fn stream_controller() -> (Controller<ConfigMap>, Events) {
    let (tx, rx) = mpsc::unbounded();
    let (reader, writer) = reflector::store();
    let trigger = reflector(writer, rx).applied_objects();
    for event in [
        Event::Init,
        Event::InitApply(config_map("a", "1")),
        Event::InitApply(config_map("b", "1")),
        Event::InitDone,
    ] {
        tx.unbounded_send(Ok(event)).expect("open");
    }
    (Controller::for_stream(trigger, reader), tx)
}

fn apply(tx: &Events, name: &str, rv: &str) {
    tx.unbounded_send(Ok(Event::Apply(config_map(name, rv))))
        .expect("the controller is running");
}

fn run(
    controller: Controller<ConfigMap>,
    ctx: &Arc<Ctx>,
) -> impl Stream<Item = Item> + Send + 'static {
    controller.run(reconcile, error_policy, ctx.clone())
}

fn start(controller: Controller<ConfigMap>, ctx: &Arc<Ctx>) -> Driver {
    let (host, _) = setup();
    Driver::start(host, run(controller, ctx), describe_item)
}

/// The next op, which must be a delay of `millis` (the fake host's clock is virtual).
fn expect_delay_of(d: &mut Driver, millis: u64) -> OpId {
    let (id, got) = d.expect_delay();
    assert_eq!(got, millis, "the delay asked of the host, in ms");
    id
}

fn sorted(mut lines: Vec<String>) -> Vec<String> {
    lines.sort();
    lines
}

#[test]
fn reconciles_listed_and_applied_objects_of_the_main_watch() {
    let (host, client) = setup();
    let ctx = Arc::new(Ctx::default());
    let controller = Controller::new(configmaps(client), Config::default());
    let mut d = Driver::start(host, run(controller, &ctx), describe_item);
    let (list, uri) = d.expect_list();
    assert!(
        uri.starts_with("/api/v1/namespaces/default/configmaps"),
        "{uri}"
    );
    d.respond(list, 200, &page(&[cm("a", "1"), cm("b", "1")], "1", None));
    let (watch, _) = d.expect_watch();
    d.establish(watch);
    assert_eq!(sorted(ctx.take()), ["start a", "start b"]);
    assert_eq!(sorted(d.take_log()), ["ok a", "ok b"]);
    // await_change: nothing more until a change.
    assert!(d.nothing_pending());
    d.event(watch, &watch_event("MODIFIED", cm("a", "2")));
    assert_eq!(ctx.take(), ["start a"]);
    // A deletion does not reconcile (the object is gone from the store).
    d.event(watch, &watch_event("DELETED", cm("b", "3")));
    assert!(ctx.take().is_empty());
    assert_eq!(d.take_log(), ["ok a"]);
}

#[test]
fn requeue_after_reconciles_again_when_its_time_comes() {
    let ctx = Arc::new(Ctx {
        action: Some(Duration::from_secs(5)),
        ..Ctx::default()
    });
    let (controller, _tx) = stream_controller();
    let mut d = start(controller, &ctx);
    assert_eq!(sorted(ctx.take()), ["start a", "start b"]);
    // One host timer for both requeues (both due 5 s after their reconciliation ended).
    expect_delay_of(&mut d, 5_000);
    assert!(d.nothing_pending());
    d.host.advance(Duration::from_millis(4_999));
    assert!(ctx.take().is_empty(), "nothing before the requeue time");
    d.host.advance(Duration::from_millis(1));
    assert_eq!(sorted(ctx.take()), ["start a", "start b"]);
    // And again 5 s later.
    expect_delay_of(&mut d, 5_000);
    d.host.advance(Duration::from_secs(5));
    assert_eq!(sorted(ctx.take()), ["start a", "start b"]);
    assert_eq!(d.take_log().len(), 6);
}

#[test]
fn requeues_are_measured_from_the_end_of_each_reconciliation() {
    let ctx = Arc::new(Ctx {
        work: true,
        action: Some(Duration::from_secs(1)),
        ..Ctx::default()
    });
    let (controller, tx) = stream_controller();
    let d = start(controller, &ctx);
    assert_eq!(sorted(ctx.take()), ["start a", "start b"]);
    // Both work 100 ms; `a` changes at 50 ms and is reconciled again after its first run.
    d.host.advance(Duration::from_millis(50));
    apply(&tx, "a", "2");
    d.host.advance(Duration::from_millis(50));
    assert_eq!(sorted(ctx.take()), ["end a", "end b", "start a"]);
    // b: ended at 100 ms, due at 1100 ms. a: ended again at 200 ms, due at 1200 ms.
    d.host.advance(Duration::from_millis(1_000));
    assert_eq!(ctx.take(), ["end a", "start b"]);
    d.host.advance(Duration::from_millis(100));
    assert_eq!(sorted(ctx.take()), ["end b", "start a"]);
}

#[test]
fn a_change_before_the_requeue_reconciles_at_once_and_replaces_the_timer() {
    let ctx = Arc::new(Ctx {
        action: Some(Duration::from_secs(5)),
        ..Ctx::default()
    });
    let (tx, rx) = mpsc::unbounded();
    let (reader, writer) = reflector::store();
    for event in [
        Event::Init,
        Event::InitApply(config_map("a", "1")),
        Event::InitDone,
    ] {
        tx.unbounded_send(Ok(event)).expect("open");
    }
    let controller = Controller::for_stream(reflector(writer, rx).applied_objects(), reader);
    let mut d = start(controller, &ctx);
    assert_eq!(ctx.take(), ["start a"]);
    let requeue = expect_delay_of(&mut d, 5_000);
    apply(&tx, "a", "2");
    d.pump();
    assert_eq!(ctx.take(), ["start a"], "the change runs at once");
    assert!(d.host.cancelled().contains(&requeue));
    // The new reconciliation's requeue replaces the old one.
    let requeue = expect_delay_of(&mut d, 5_000);
    assert!(d.nothing_pending());
    d.elapse(requeue);
    assert_eq!(ctx.take(), ["start a"]);
}

#[test]
fn the_error_policy_action_requeues_a_failed_reconciliation() {
    let ctx = Arc::new(Ctx {
        fail: true,
        policy_requeue: Some(Duration::from_secs(2)),
        ..Ctx::default()
    });
    let (tx, rx) = mpsc::unbounded();
    let (reader, writer) = reflector::store();
    for event in [
        Event::Init,
        Event::InitApply(config_map("a", "1")),
        Event::InitDone,
    ] {
        tx.unbounded_send(Ok(event)).expect("open");
    }
    let controller = Controller::for_stream(reflector(writer, rx).applied_objects(), reader);
    let mut d = start(controller, &ctx);
    assert_eq!(ctx.take(), ["start a", "policy a"]);
    assert_eq!(d.take_log(), ["failed a"]);
    let timer = expect_delay_of(&mut d, 2_000);
    d.elapse(timer);
    assert_eq!(ctx.take(), ["start a", "policy a"]);
    assert_eq!(d.take_log(), ["failed a"]);
}

#[test]
fn one_object_is_never_reconciled_twice_at_once() {
    let ctx = Arc::new(Ctx {
        work: true,
        ..Ctx::default()
    });
    let (tx, rx) = mpsc::unbounded();
    let (reader, writer) = reflector::store();
    for event in [
        Event::Init,
        Event::InitApply(config_map("a", "1")),
        Event::InitDone,
    ] {
        tx.unbounded_send(Ok(event)).expect("open");
    }
    let controller = Controller::for_stream(reflector(writer, rx).applied_objects(), reader);
    let mut d = start(controller, &ctx);
    assert_eq!(ctx.take(), ["start a"]);
    let work = expect_delay_of(&mut d, WORK_MILLIS);
    // Changes during the reconciliation wait for it, and collapse into one request.
    apply(&tx, "a", "2");
    apply(&tx, "a", "3");
    assert!(d.nothing_pending());
    assert!(
        ctx.take().is_empty(),
        "no second reconciliation while one runs"
    );
    d.elapse(work);
    assert_eq!(ctx.take(), ["end a", "start a"]);
    assert_eq!(d.take_log(), ["ok a"]);
    let work = expect_delay_of(&mut d, WORK_MILLIS);
    d.elapse(work);
    assert_eq!(ctx.take(), ["end a"]);
    assert_eq!(d.take_log(), ["ok a"]);
    assert!(d.nothing_pending());
}

#[test]
fn the_concurrency_limit_is_honoured() {
    let ctx = Arc::new(Ctx {
        work: true,
        ..Ctx::default()
    });
    let (controller, _tx) = stream_controller();
    let controller = controller.with_config(ControllerConfig::default().concurrency(1));
    let mut d = start(controller, &ctx);
    let first = ctx.take();
    assert_eq!(first.len(), 1, "one at a time: {first:?}");
    let work = expect_delay_of(&mut d, WORK_MILLIS);
    assert!(d.nothing_pending());
    d.elapse(work);
    let next = ctx.take();
    assert_eq!(next.len(), 2, "{next:?}");
    assert!(next[0].starts_with("end ") && next[1].starts_with("start "));
    assert_ne!(first[0][6..], next[1][6..], "the other object");
    let work = expect_delay_of(&mut d, WORK_MILLIS);
    d.elapse(work);
    assert_eq!(d.take_log().len(), 2);
}

#[test]
fn without_a_limit_objects_are_reconciled_concurrently() {
    let ctx = Arc::new(Ctx {
        work: true,
        ..Ctx::default()
    });
    let (controller, _tx) = stream_controller();
    let mut d = start(controller, &ctx);
    assert_eq!(sorted(ctx.take()), ["start a", "start b"]);
    let a = expect_delay_of(&mut d, WORK_MILLIS);
    let b = expect_delay_of(&mut d, WORK_MILLIS);
    d.elapse(a);
    d.elapse(b);
    assert_eq!(d.take_log().len(), 2);
}

#[test]
fn the_debounce_delays_reconciliations_on_a_host_timer() {
    let ctx = Arc::new(Ctx::default());
    let (tx, rx) = mpsc::unbounded();
    let (reader, writer) = reflector::store();
    for event in [
        Event::Init,
        Event::InitApply(config_map("a", "1")),
        Event::InitDone,
    ] {
        tx.unbounded_send(Ok(event)).expect("open");
    }
    let controller = Controller::for_stream(reflector(writer, rx).applied_objects(), reader)
        .with_config(ControllerConfig::default().debounce(Duration::from_secs(1)));
    let mut d = start(controller, &ctx);
    let timer = expect_delay_of(&mut d, 1_000);
    assert!(ctx.take().is_empty());
    d.elapse(timer);
    assert_eq!(ctx.take(), ["start a"]);
}

fn owned_secret(name: &str, owner: &str, rv: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": name, "namespace": "default", "resourceVersion": rv,
                        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                             "name": owner, "uid": "u1"}]}})
}

/// Answers the LISTs of config maps (`configmaps`) and secrets (`secrets`) and establishes
/// both watches; returns the secrets' watch.
fn list_and_watch(d: &mut Driver, configmaps: &[Value], secrets: &[Value]) -> OpId {
    let mut watches = Vec::new();
    for _ in 0..4 {
        match d.next_op() {
            Submitted::Http { id, request, .. } if request.uri.contains("/secrets") => {
                d.respond(
                    id,
                    200,
                    &json!({"apiVersion": "v1", "kind": "SecretList",
                    "metadata": {"resourceVersion": "1"}, "items": secrets}),
                );
            }
            Submitted::Http { id, .. } => d.respond(id, 200, &page(configmaps, "1", None)),
            Submitted::Watch { id, request } => {
                d.establish(id);
                watches.push((id, request.path));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    watches
        .into_iter()
        .find(|(_, uri)| uri.contains("/secrets"))
        .map(|(id, _)| id)
        .expect("a secrets watch")
}

#[test]
fn owned_objects_trigger_their_owner() {
    let (host, client) = setup();
    let ctx = Arc::new(Ctx::default());
    let controller = Controller::new(configmaps(client.clone()), Config::default()).owns(
        Api::<Secret>::namespaced(client, "default"),
        Config::default(),
    );
    let mut d = Driver::start(host, run(controller, &ctx), describe_item);
    let secrets = list_and_watch(&mut d, &[cm("a", "1"), cm("b", "1")], &[]);
    assert_eq!(sorted(ctx.take()), ["start a", "start b"]);
    d.event(secrets, &watch_event("ADDED", owned_secret("s", "a", "2")));
    assert_eq!(ctx.take(), ["start a"]);
    // Deleting the child also triggers the owner.
    d.event(
        secrets,
        &watch_event("DELETED", owned_secret("s", "a", "3")),
    );
    assert_eq!(ctx.take(), ["start a"]);
}

#[test]
fn watches_maps_related_objects_to_reconcile_requests() {
    let (host, client) = setup();
    let ctx = Arc::new(Ctx::default());
    let controller = Controller::new(configmaps(client.clone()), Config::default()).watches(
        Api::<Secret>::namespaced(client, "default"),
        Config::default(),
        |secret: Secret| {
            secret
                .labels()
                .get("for")
                .map(|name| ObjectRef::new(name).within("default"))
        },
    );
    let mut d = Driver::start(host, run(controller, &ctx), describe_item);
    let secrets = list_and_watch(&mut d, &[cm("a", "1"), cm("b", "1")], &[]);
    ctx.take();
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s",
        "namespace": "default", "resourceVersion": "2", "labels": {"for": "b"}}});
    d.event(secrets, &watch_event("ADDED", secret));
    assert_eq!(ctx.take(), ["start b"]);
}

#[test]
fn reconcile_all_on_reconciles_every_stored_object() {
    let ctx = Arc::new(Ctx::default());
    let (controller, _tx) = stream_controller();
    let (all_tx, all_rx) = mpsc::unbounded::<()>();
    let mut d = start(controller.reconcile_all_on(all_rx), &ctx);
    ctx.take();
    all_tx.unbounded_send(()).expect("open");
    d.pump();
    assert_eq!(sorted(ctx.take()), ["start a", "start b"]);
}

#[test]
fn graceful_shutdown_lets_running_reconciliations_finish_then_ends() {
    let ctx = Arc::new(Ctx {
        work: true,
        action: Some(Duration::from_secs(5)),
        ..Ctx::default()
    });
    let (tx, rx) = mpsc::unbounded();
    let (reader, writer) = reflector::store();
    for event in [
        Event::Init,
        Event::InitApply(config_map("a", "1")),
        Event::InitDone,
    ] {
        tx.unbounded_send(Ok(event)).expect("open");
    }
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let controller = Controller::for_stream(reflector(writer, rx).applied_objects(), reader)
        .graceful_shutdown_on(stop_rx.map(|_| ()));
    let mut d = start(controller, &ctx);
    assert_eq!(ctx.take(), ["start a"]);
    let work = expect_delay_of(&mut d, WORK_MILLIS);
    stop_tx.send(()).expect("running");
    d.pump();
    // No new reconciliations after the shutdown request...
    let _ = tx.unbounded_send(Ok(Event::Apply(config_map("a", "2"))));
    d.pump();
    assert!(
        d.take_log().is_empty(),
        "the running reconciliation is not cut short"
    );
    // ...the running one finishes (its requeue dropped), then the stream ends.
    d.elapse(work);
    assert_eq!(ctx.take(), ["end a"]);
    assert_eq!(d.take_log(), ["ok a", "END"]);
    assert!(d.nothing_pending(), "no requeue timer after shutdown");
}

#[test]
fn the_host_stop_request_shuts_down_gracefully_then_forcefully() {
    let ctx = Arc::new(Ctx {
        work: true,
        ..Ctx::default()
    });
    let (controller, _tx) = stream_controller();
    let mut d = start(controller.shutdown_on_signal(), &ctx);
    let mut stops = Vec::new();
    let mut works = Vec::new();
    while !d.nothing_pending() {
        match d.next_op() {
            Submitted::StopSignal { id } => stops.push(id),
            Submitted::Delay { id, .. } => works.push(id),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((stops.len(), works.len()), (1, 2));
    d.host.complete(stops[0], &Completion::Stop {}, b"");
    d.pump();
    // Graceful: the two reconciliations go on; a second stop request cuts them short.
    d.elapse(works[0]);
    assert_eq!(d.take_log().len(), 1);
    let second = match d.next_op() {
        Submitted::StopSignal { id } => id,
        other => panic!("expected a second stop signal, got {other:?}"),
    };
    d.host.complete(second, &Completion::Stop {}, b"");
    d.pump();
    assert_eq!(d.take_log(), ["END"]);
}

#[test]
fn applier_reports_objects_missing_from_the_store() {
    let (host, _) = setup();
    let ctx = Arc::new(Ctx::default());
    let (reader, mut writer) = reflector::store::<ConfigMap>();
    writer.apply_watcher_event(&Event::Init);
    writer.apply_watcher_event(&Event::InitDone);
    let queue = stream::iter([Ok::<_, watcher::Error>(
        ObjectRef::<ConfigMap>::new("missing").within("default"),
    )]);
    let stream = applier(
        |obj, ctx| Box::pin(reconcile(obj, ctx)),
        error_policy,
        ctx,
        reader,
        queue,
        ControllerConfig::default(),
    );
    let mut d = Driver::start(host, stream, describe_item);
    assert_eq!(d.take_log(), ["not found missing", "END"]);
}

#[test]
fn nothing_is_reconciled_before_the_store_is_ready() {
    let ctx = Arc::new(Ctx::default());
    let (tx, rx) = mpsc::unbounded();
    let (reader, writer) = reflector::store();
    let controller = Controller::for_stream(reflector(writer, rx).applied_objects(), reader);
    let mut d = start(controller, &ctx);
    tx.unbounded_send(Ok(Event::Init)).expect("open");
    tx.unbounded_send(Ok(Event::InitApply(config_map("a", "1"))))
        .expect("open");
    d.pump();
    assert!(ctx.take().is_empty());
    tx.unbounded_send(Ok(Event::InitDone)).expect("open");
    d.pump();
    assert_eq!(ctx.take(), ["start a"]);
}

#[test]
fn reconcile_on_and_owns_stream_trigger_reconciliations() {
    let ctx = Arc::new(Ctx::default());
    let (controller, _tx) = stream_controller();
    let (refs_tx, refs_rx) = mpsc::unbounded::<ObjectRef<ConfigMap>>();
    let (children_tx, children_rx) = mpsc::unbounded::<Result<Secret, watcher::Error>>();
    let controller = controller.reconcile_on(refs_rx).owns_stream(children_rx);
    let mut d = start(controller, &ctx);
    ctx.take();
    d.take_log();
    refs_tx
        .unbounded_send(ObjectRef::new("b").within("default"))
        .expect("open");
    d.pump();
    assert_eq!(ctx.take(), ["start b"]);
    let child = serde_json::from_value(owned_secret("s", "a", "1")).expect("a secret");
    children_tx.unbounded_send(Ok(child)).expect("open");
    d.pump();
    assert_eq!(ctx.take(), ["start a"]);
    refs_tx
        .unbounded_send(ObjectRef::new("gone").within("default"))
        .expect("open");
    d.pump();
    assert_eq!(d.take_log(), ["ok b", "ok a", "not found gone"]);
}

#[test]
fn trigger_errors_are_reported_and_retried_after_the_trigger_backoff() {
    let ctx = Arc::new(Ctx::default());
    let (controller, tx) = stream_controller();
    let mut d = start(controller, &ctx);
    ctx.take();
    d.take_log();
    tx.unbounded_send(Err(watcher::Error::NoResourceVersion))
        .expect("open");
    d.pump();
    assert_eq!(d.take_log(), ["queue error"]);
    // The default trigger backoff waits (800 ms, jittered) on a host timer before polling
    // the triggers again.
    let (timer, millis) = d.expect_delay();
    assert!((800..1600).contains(&millis), "{millis}");
    apply(&tx, "a", "2");
    d.pump();
    assert!(ctx.take().is_empty(), "held during the backoff");
    d.elapse(timer);
    assert_eq!(ctx.take(), ["start a"]);
}
