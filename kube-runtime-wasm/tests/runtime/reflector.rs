//! The reflector's store: contents after each kind of event, readiness, and a reflector fed
//! by a watcher on the fake host.

use super::support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_runtime_wasm::WatchStreamExt;
use kube_runtime_wasm::reflector::{self, ObjectRef, Store, store};
use kube_runtime_wasm::watcher::{Config, Event, watcher};
use kube_wasm_client::ResourceExt;
use kube_wasm_guest::fake::FakeHost;

fn object(name: &str, rv: &str) -> ConfigMap {
    serde_json::from_value(cm(name, rv)).expect("a config map")
}

fn names(store: &Store<ConfigMap>) -> Vec<String> {
    let mut names: Vec<_> = store.state().iter().map(|o| o.name_any()).collect();
    names.sort();
    names
}

#[test]
fn the_store_follows_listings_and_changes() {
    let (reader, mut writer) = store::<ConfigMap>();
    assert!(reader.is_empty());
    writer.apply_watcher_event(&Event::Init);
    writer.apply_watcher_event(&Event::InitApply(object("a", "1")));
    writer.apply_watcher_event(&Event::InitApply(object("b", "2")));
    assert!(reader.is_empty(), "a listing is invisible until InitDone");
    writer.apply_watcher_event(&Event::InitDone);
    assert_eq!(names(&reader), ["a", "b"]);

    writer.apply_watcher_event(&Event::Apply(object("c", "3")));
    writer.apply_watcher_event(&Event::Apply(object("a", "4")));
    writer.apply_watcher_event(&Event::Delete(object("b", "5")));
    assert_eq!(names(&reader), ["a", "c"]);
    assert_eq!(reader.len(), 2);
    let a = reader
        .get(&ObjectRef::new("a").within("default"))
        .expect("a is cached");
    assert_eq!(a.resource_version().as_deref(), Some("4"));
    assert!(reader.get(&ObjectRef::new("a").within("other")).is_none());
    let found = reader.find(|o| o.name_any() == "c").expect("c is cached");
    assert_eq!(found.resource_version().as_deref(), Some("3"));

    // A relisting replaces everything at InitDone: objects deleted meanwhile disappear.
    writer.apply_watcher_event(&Event::Init);
    writer.apply_watcher_event(&Event::InitApply(object("c", "6")));
    assert_eq!(names(&reader), ["a", "c"]);
    writer.apply_watcher_event(&Event::InitDone);
    assert_eq!(names(&reader), ["c"]);
    assert!(!reader.is_empty());
}

#[test]
fn wait_until_ready_resolves_at_the_first_init_done() {
    let host = FakeHost::install();
    let (reader, mut writer) = store::<ConfigMap>();
    let waiter = reader.clone();
    let mut task = host.spawn(async move { waiter.wait_until_ready().await.is_ok() });
    host.run_until_stalled();
    assert!(!task.is_finished());
    writer.apply_watcher_event(&Event::Init);
    writer.apply_watcher_event(&Event::InitApply(object("a", "1")));
    host.run_until_stalled();
    assert!(!task.is_finished(), "not ready before InitDone");
    writer.apply_watcher_event(&Event::InitDone);
    host.run_until_stalled();
    assert_eq!(task.output(), Some(true));
    // Once ready, waiting resolves at once.
    let mut again = host.spawn(async move { reader.wait_until_ready().await.is_ok() });
    host.run_until_stalled();
    assert_eq!(again.output(), Some(true));
}

#[test]
fn wait_until_ready_fails_when_the_writer_is_dropped() {
    let host = FakeHost::install();
    let (reader, writer) = store::<ConfigMap>();
    let mut task = host.spawn(async move { reader.wait_until_ready().await });
    host.run_until_stalled();
    assert!(!task.is_finished());
    drop(writer);
    host.run_until_stalled();
    let result = task.output().expect("finished");
    assert_eq!(
        result.expect_err("the writer is gone").to_string(),
        "writer was dropped before store became ready"
    );
}

#[test]
fn a_reflector_fed_by_a_watcher_caches_the_collection() {
    let (host, client) = setup();
    let (reader, writer) = store::<ConfigMap>();
    let stream = reflector::reflector(writer, watcher(configmaps(client), Config::default()));
    let mut d = Driver::start(host, stream, describe);
    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[cm("a", "1"), cm("b", "2")], "10", None));
    assert_eq!(names(&reader), ["a", "b"]);
    let (watch, _) = d.expect_watch();
    d.establish(watch);
    d.event(watch, &watch_event("DELETED", cm("a", "11")));
    d.event(watch, &watch_event("ADDED", cm("c", "12")));
    d.event(watch, &error_event(500, "InternalError"));
    assert_eq!(names(&reader), ["b", "c"]);
    assert_eq!(
        d.take_log().last().map(String::as_str),
        Some("Err WatchError 500")
    );
}

#[test]
fn reflect_is_the_combinator_form() {
    let (host, client) = setup();
    let (reader, writer) = store::<ConfigMap>();
    let stream = watcher(configmaps(client), Config::default())
        .reflect(writer)
        .applied_objects();
    let mut d = Driver::start(host, stream, describe_object);
    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[cm("a", "1")], "10", None));
    assert_eq!(names(&reader), ["a"]);
    assert_eq!(d.take_log(), ["a@1"]);
}

#[test]
fn object_refs_compare_by_name_and_namespace_only() {
    let a = object("a", "1");
    let r = ObjectRef::from_obj(&a);
    assert_eq!(r, ObjectRef::new("a").within("default"));
    assert_eq!(r.extra.resource_version.as_deref(), Some("1"));
    assert_eq!(r.to_string(), "ConfigMap.v1./a.default");
}
