//! The watcher's state machine: LIST pages, WATCH from the right version, resuming,
//! relisting after 410 Gone, errors as items.

use super::support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_runtime_wasm::watcher::{self, Config, watcher};
use kube_wasm_abi::ErrorCode;
use std::time::Duration;

/// Starts `watcher(configmaps, config)` and answers its first LIST with one page holding
/// `names` at version `rv`; returns the driver and the established watch's op.
fn listed_and_watching(config: Config, names: &[&str], rv: &str) -> (Driver, u64) {
    let (host, client) = setup();
    let mut d = Driver::start(host, watcher(configmaps(client), config), describe);
    let (list, _) = d.expect_list();
    let items: Vec<_> = names.iter().map(|n| cm(n, "1")).collect();
    d.respond(list, 200, &page(&items, rv, None));
    let (watch, request) = d.expect_watch();
    assert_eq!(request.resource_version, rv);
    d.establish(watch);
    (d, watch)
}

#[test]
fn lists_in_pages_then_watches_from_the_last_page_version() {
    let (host, client) = setup();
    let config = Config::default().page_size(2).labels("app=x");
    let mut d = Driver::start(host, watcher(configmaps(client), config), describe);

    let (first, uri) = d.expect_list();
    assert!(
        uri.starts_with("/api/v1/namespaces/default/configmaps?"),
        "{uri}"
    );
    assert!(uri.contains("limit=2"), "{uri}");
    assert!(uri.contains("labelSelector=app%3Dx"), "{uri}");
    assert!(!uri.contains("continue="), "{uri}");
    d.respond(
        first,
        200,
        &page(&[cm("a", "5"), cm("b", "6")], "10", Some("tok1")),
    );

    let (second, uri) = d.expect_list();
    assert!(uri.contains("continue=tok1"), "{uri}");
    assert!(uri.contains("limit=2"), "{uri}");
    d.respond(second, 200, &page(&[cm("c", "7")], "11", None));

    assert_eq!(
        d.take_log(),
        [
            "Init",
            "InitApply(a)",
            "InitApply(b)",
            "InitApply(c)",
            "InitDone"
        ]
    );
    let (_, request) = d.expect_watch();
    assert_eq!(request.path, "/api/v1/namespaces/default/configmaps");
    assert_eq!(request.resource_version, "11");
    assert_eq!(request.label_selector.as_deref(), Some("app=x"));
    assert!(request.bookmarks);
    assert!(!request.send_initial_events);
    assert!(!request.metadata_only);
    assert_eq!(request.timeout_seconds, None);
}

#[test]
fn list_params_follow_the_config() {
    let (host, client) = setup();
    let mut config = Config::default()
        .any_semantic()
        .fields("metadata.name=a")
        .timeout(60)
        .disable_bookmarks();
    // kube-core drops `resourceVersion=0` from paginated lists (the API server would ignore
    // the limit): ask for one page to see it.
    config.page_size = None;
    let mut d = Driver::start(host, watcher(configmaps(client), config), describe);
    let (list, uri) = d.expect_list();
    assert!(uri.contains("resourceVersion=0"), "{uri}");
    assert!(uri.contains("resourceVersionMatch=NotOlderThan"), "{uri}");
    assert!(uri.contains("fieldSelector=metadata.name%3Da"), "{uri}");
    assert!(!uri.contains("limit="), "{uri}");
    d.respond(list, 200, &page(&[], "3", None));
    let (_, request) = d.expect_watch();
    assert_eq!(request.timeout_seconds, Some(60));
    assert!(!request.bookmarks);
    assert_eq!(request.field_selector.as_deref(), Some("metadata.name=a"));
}

#[test]
fn watch_events_become_apply_and_delete_and_an_ended_watch_resumes() {
    let (mut d, watch) = listed_and_watching(Config::default(), &["a"], "10");
    d.event(watch, &watch_event("ADDED", cm("b", "12")));
    d.event(watch, &watch_event("MODIFIED", cm("a", "13")));
    d.event(watch, &watch_event("DELETED", cm("b", "14")));
    d.end(watch);
    assert_eq!(
        d.take_log(),
        [
            "Init",
            "InitApply(a)",
            "InitDone",
            "Apply(b)",
            "Apply(a)",
            "Delete(b)"
        ]
    );
    // No relist: the next watch starts from the last object's version.
    let (_, request) = d.expect_watch();
    assert_eq!(request.resource_version, "14");
    assert!(d.nothing_pending());
}

#[test]
fn a_bookmark_moves_the_resume_point() {
    let (mut d, watch) = listed_and_watching(Config::default(), &[], "10");
    d.event(watch, &watch_event("ADDED", cm("a", "12")));
    d.event(watch, &bookmark("20"));
    d.end(watch);
    assert_eq!(d.take_log(), ["Init", "InitDone", "Apply(a)"]);
    let (_, request) = d.expect_watch();
    assert_eq!(request.resource_version, "20");
}

#[test]
fn gone_as_an_error_event_relists() {
    let (mut d, watch) = listed_and_watching(Config::default(), &["a"], "10");
    d.event(watch, &error_event(410, "Expired"));
    assert!(
        d.host.cancelled().contains(&watch),
        "the gone watch is closed on the host"
    );
    let (list, uri) = d.expect_list();
    assert!(!uri.contains("continue="), "{uri}");
    d.respond(list, 200, &page(&[cm("b", "30")], "31", None));
    assert_eq!(
        d.take_log(),
        [
            "Init",
            "InitApply(a)",
            "InitDone",
            "Err WatchError 410",
            "Init",
            "InitApply(b)",
            "InitDone"
        ]
    );
    let (_, request) = d.expect_watch();
    assert_eq!(request.resource_version, "31");
}

#[test]
fn gone_at_watch_start_relists() {
    let (host, client) = setup();
    let mut d = Driver::start(
        host,
        watcher(configmaps(client), Config::default()),
        describe,
    );
    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[], "10", None));
    let (watch, _) = d.expect_watch();
    d.respond(watch, 410, &status(410, "Gone"));
    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[], "40", None));
    assert_eq!(
        d.take_log(),
        [
            "Init",
            "InitDone",
            "Err WatchStartFailed Api 410",
            "Init",
            "InitDone"
        ]
    );
    let (_, request) = d.expect_watch();
    assert_eq!(request.resource_version, "40");
}

#[test]
fn a_refused_watch_start_retries_from_the_same_version() {
    let (host, client) = setup();
    let mut d = Driver::start(
        host,
        watcher(configmaps(client), Config::default()),
        describe,
    );
    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[], "10", None));
    let (watch, _) = d.expect_watch();
    d.respond(watch, 403, &status(403, "Forbidden"));
    let (watch, request) = d.expect_watch();
    assert_eq!(request.resource_version, "10");
    d.fail(watch, ErrorCode::Connect);
    let (_, request) = d.expect_watch();
    assert_eq!(request.resource_version, "10");
    let log = d.take_log();
    assert_eq!(
        log[..3],
        ["Init", "InitDone", "Err WatchStartFailed Api 403"]
    );
    assert!(
        log[3].starts_with("Err WatchStartFailed ServiceError"),
        "{log:?}"
    );
}

#[test]
fn watch_errors_are_items_and_the_watch_goes_on() {
    let (mut d, watch) = listed_and_watching(Config::default(), &[], "10");
    d.event(watch, &error_event(500, "InternalError"));
    d.event(watch, &watch_event("ADDED", cm("a", "11")));
    d.fail(watch, ErrorCode::Stream);
    assert_eq!(
        d.take_log(),
        [
            "Init",
            "InitDone",
            "Err WatchError 500",
            "Apply(a)",
            "Err WatchFailed ReadEvents"
        ]
    );
    // The broken stream ended: watch again from the last version, without relisting.
    let (_, request) = d.expect_watch();
    assert_eq!(request.resource_version, "11");
}

#[test]
fn a_failed_list_is_an_error_and_starts_over() {
    let (host, client) = setup();
    let config = Config::default().page_size(1);
    let mut d = Driver::start(host, watcher(configmaps(client), config), describe);
    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[cm("a", "1")], "10", Some("tok")));
    let (list, _) = d.expect_list();
    d.respond(list, 500, &status(500, "InternalError"));
    let (list, uri) = d.expect_list();
    assert!(
        !uri.contains("continue="),
        "starts from the first page: {uri}"
    );
    d.respond(list, 200, &page(&[], "12", None));
    assert_eq!(
        d.take_log(),
        [
            "Init",
            "InitApply(a)",
            "Err InitialListFailed Api 500",
            "Init",
            "InitDone"
        ]
    );
}

#[test]
fn a_list_without_resource_version_is_an_error() {
    let (host, client) = setup();
    let mut d = Driver::start(
        host,
        watcher(configmaps(client), Config::default()),
        describe,
    );
    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[], "", None));
    assert_eq!(d.take_log(), ["Init", "Err NoResourceVersion", "Init"]);
    d.expect_list();
}

#[test]
fn an_idle_watch_is_restarted_295s_after_its_last_event() {
    let (mut d, watch) = listed_and_watching(Config::default(), &[], "10");
    assert_eq!(d.idle_timers.len(), 1, "one host timer for the idle limit");
    // Events do not start more timers.
    d.host.advance(Duration::from_secs(100));
    d.event(watch, &watch_event("ADDED", cm("a", "11")));
    d.host.advance(Duration::from_secs(100));
    d.event(watch, &watch_event("ADDED", cm("b", "12")));
    d.pump();
    assert_eq!(d.idle_timers.len(), 1);
    // At 295 s the timer fires after events arrived: re-armed for the rest of the limit,
    // counted from the last event (200 s + 290 s + 5 s).
    d.host.advance(Duration::from_secs(95));
    let (_, millis) = d.expect_delay();
    assert_eq!(millis, 200_000);
    d.host.advance(Duration::from_millis(199_999));
    assert!(d.nothing_pending());
    assert!(
        !d.host.cancelled().contains(&watch),
        "still within the limit"
    );
    // 295 s without an event: the watch is closed and resumed from the last version.
    d.host.advance(Duration::from_millis(1));
    assert!(d.host.cancelled().contains(&watch));
    let (_, request) = d.expect_watch();
    assert_eq!(request.resource_version, "12");
}

#[test]
fn the_idle_limit_is_the_configured_timeout_plus_five_seconds() {
    let (mut d, watch) = listed_and_watching(Config::default().timeout(30), &[], "10");
    let (_, millis) = d.expect_delay();
    assert_eq!(millis, 35_000);
    // A connection that died silently: the server never ends the watch at 30 s.
    d.host.advance(Duration::from_millis(34_999));
    assert!(!d.host.cancelled().contains(&watch));
    d.host.advance(Duration::from_millis(1));
    assert!(d.host.cancelled().contains(&watch));
    d.expect_watch();
}

#[test]
fn timeout_zero_has_no_idle_limit() {
    let (d, _) = listed_and_watching(Config::default().timeout(0), &[], "10");
    assert!(d.idle_timers.is_empty());
}

#[test]
fn streaming_lists_watch_with_initial_events() {
    let (host, client) = setup();
    let config = Config::default().streaming_lists();
    let mut d = Driver::start(host, watcher(configmaps(client), config), describe);
    let (watch, request) = d.expect_watch();
    assert!(request.send_initial_events);
    assert!(request.bookmarks);
    assert_eq!(request.resource_version, "0");
    d.establish(watch);
    d.event(watch, &watch_event("ADDED", cm("a", "5")));
    let mut end = bookmark("9");
    end["object"]["metadata"]["annotations"] =
        serde_json::json!({"k8s.io/initial-events-end": "true"});
    d.event(watch, &end);
    d.event(watch, &watch_event("MODIFIED", cm("a", "10")));
    d.end(watch);
    assert_eq!(
        d.take_log(),
        ["Init", "InitApply(a)", "InitDone", "Apply(a)"]
    );
    let (_, request) = d.expect_watch();
    assert!(!request.send_initial_events);
    assert_eq!(request.resource_version, "10");
}

#[test]
#[allow(deprecated)]
fn metadata_watcher_asks_for_metadata() {
    let (host, client) = setup();
    let stream = watcher::metadata_watcher(configmaps(client), Config::default());
    let mut d = Driver::start(host, stream, |item| match item {
        Ok(event) => format!("{event:?}")
            .split('(')
            .next()
            .unwrap_or_default()
            .to_string(),
        Err(err) => describe_error(err),
    });
    let (list, _) = d.expect_list();
    d.respond(
        list,
        200,
        &serde_json::json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
            "metadata": {"resourceVersion": "3"},
            "items": [{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                       "metadata": {"name": "a", "resourceVersion": "2"}}]}),
    );
    assert_eq!(d.take_log(), ["Init", "InitApply", "InitDone"]);
    let (_, request) = d.expect_watch();
    assert!(request.metadata_only);
}

#[test]
fn watch_object_yields_the_object_or_none() {
    let (host, client) = setup();
    let stream = watcher::watch_object(configmaps(client), "a");
    let mut d = Driver::start(host, stream, |item| match item {
        Ok(Some(obj)) => format!("Some({})", obj.metadata.name.clone().unwrap_or_default()),
        Ok(None) => "None".to_string(),
        Err(err) => describe_error(err),
    });
    let (list, uri) = d.expect_list();
    assert!(uri.contains("fieldSelector=metadata.name%3Da"), "{uri}");
    d.respond(list, 200, &page(&[], "3", None));
    let (watch, _) = d.expect_watch();
    d.establish(watch);
    d.event(watch, &watch_event("ADDED", cm("a", "4")));
    d.event(watch, &watch_event("DELETED", cm("a", "5")));
    assert_eq!(d.take_log(), ["None", "Some(a)", "None"]);
}

#[test]
fn watcher_streams_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let (_host, client) = setup();
    let stream = watcher::<ConfigMap>(configmaps(client.clone()), Config::default());
    assert_send(&stream);
    let stream = watcher::watch_object::<ConfigMap>(configmaps(client), "a");
    assert_send(&stream);
}
