//! Shared watches (`watch_cache`): modules with identical watches share one upstream
//! LIST+WATCH and are served from the host's cache with kube-apiserver's resourceVersion
//! semantics. The API server is a fake transport behind a real `kube::Client`.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{
    Guest, Reply, Seen, call_with_frame, fake_client, run_guests_on, test_settings, wat_bytes,
};
use host_shim::upstream::watch_cache::CacheSettings;
use host_shim::{ModuleOutcome, Upstream};
use kube_wasm_abi::{WatchRequest, encode_frame};

const PATH: &str = "/api/v1/namespaces/ns/configmaps";

fn is_watch(req: &Seen) -> bool {
    req.uri.query().is_some_and(|q| q.contains("watch=true"))
}

fn count(seen: &Mutex<Vec<Seen>>, watch: bool) -> usize {
    seen.lock()
        .expect("log")
        .iter()
        .filter(|r| is_watch(r) == watch)
        .count()
}

fn list_body(rv: u64, names: &[&str]) -> Vec<u8> {
    let items: Vec<String> = names
        .iter()
        .map(|n| {
            format!(r#"{{"metadata":{{"name":"{n}","namespace":"ns","resourceVersion":"{rv}"}}}}"#)
        })
        .collect();
    format!(
        r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"}},"items":[{}]}}"#,
        items.join(",")
    )
    .into_bytes()
}

fn event(kind: &str, name: &str, rv: u64) -> String {
    format!(
        r#"{{"type":"{kind}","object":{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}}}}}}"#
    )
}

fn watch_from(rv: &str, timeout: Option<u32>) -> WatchRequest {
    WatchRequest {
        path: PATH.into(),
        label_selector: Some("app=ring".into()),
        field_selector: None,
        timeout_seconds: timeout,
        bookmarks: false,
        send_initial_events: false,
        resource_version: rv.into(),
        metadata_only: false,
    }
}

fn watch_guest(request: &WatchRequest) -> Vec<u8> {
    let frame = encode_frame(request, b"");
    Guest::new(&format!("(drop {})", call_with_frame("watch", &frame)))
        .frame(&frame)
        .wasm()
}

/// Host settings that share watches, closing an informer `linger` after its last subscriber.
fn shared_settings(linger: Duration) -> (host_shim::Settings, Arc<Mutex<Vec<u8>>>) {
    let (mut settings, buffer) = test_settings();
    settings.shared_watches = Some(CacheSettings {
        linger,
        ..CacheSettings::default()
    });
    (settings, buffer)
}

/// Runs `guests` on a host sharing watches whose informers close as soon as they are unused.
async fn run_shared(upstream: Upstream, guests: &[(&str, Vec<u8>)]) -> common::Run {
    run_guests_on(upstream, shared_settings(Duration::ZERO), guests).await
}

/// The events a watch guest recorded, whatever its op id, as `type name rv` (`head`, `end` as
/// they are).
fn events_of(run: &common::Run, name: &str) -> Vec<String> {
    run.lines_of(name)
        .iter()
        .map(|line| {
            // Without the op id the guest prints first (`<op>:`).
            let line = match line.split_once(':') {
                Some((op, rest)) if op.bytes().all(|b| b.is_ascii_digit()) => rest,
                _ => line,
            };
            if line.starts_with(r#"{"kind":"head""#) {
                return "head".into();
            }
            let Some(event) = line.strip_prefix(r#"{"kind":"watch_event"}"#) else {
                return line.to_owned();
            };
            let event: serde_json::Value = serde_json::from_str(event).expect("event json");
            let object = &event["object"];
            match event["type"].as_str() {
                Some("ERROR") => format!("ERROR {} {}", object["code"], object["message"]),
                kind => format!(
                    "{} {} {}",
                    kind.unwrap_or("?"),
                    object["metadata"]["name"].as_str().unwrap_or(""),
                    object["metadata"]["resourceVersion"].as_str().unwrap_or("")
                ),
            }
        })
        .collect()
}

/// An API server whose LIST answers `a` at resourceVersion 41 and whose WATCH sends `ADDED b`
/// at 42 and `MODIFIED a` at 43, then stays open; and its request log.
fn listed_at_41_then_42_and_43() -> (kube::Client, Arc<Mutex<Vec<Seen>>>) {
    let closed = Arc::new(AtomicBool::new(false));
    fake_client(move |req| {
        if is_watch(req) {
            events_42_and_43(&closed)
        } else {
            Reply::ok(&list_body(41, &["a"]))
        }
    })
}

/// A watch's answer: `ADDED b` at 42 and `MODIFIED a` at 43, then open until `closed`.
fn events_42_and_43(closed: &Arc<AtomicBool>) -> Reply {
    let events = [event("ADDED", "b", 42), event("MODIFIED", "a", 43)];
    Reply::new(
        200,
        vec![Ok(format!("{}\n{}\n", events[0], events[1]).into_bytes())],
    )
    .hanging(closed.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_watches_share_one_list_and_one_watch_and_all_get_every_event() {
    let (client, seen) = listed_at_41_then_42_and_43();
    let upstream = Upstream::new(client, "https://fake.invalid");
    let guest = watch_guest(&watch_from("41", Some(1)));
    let run = run_shared(
        upstream,
        &[("w1", guest.clone()), ("w2", guest.clone()), ("w3", guest)],
    )
    .await;
    for name in ["w1", "w2", "w3"] {
        assert_eq!(
            run.outcome(name),
            &ModuleOutcome::Exited(0),
            "{}",
            run.output
        );
        assert_eq!(
            events_of(&run, name),
            ["head", "ADDED b 42", "MODIFIED a 43", r#"{"kind":"end"}"#],
            "{name}"
        );
    }
    assert_eq!(count(&seen, false), 1, "one upstream LIST");
    assert_eq!(count(&seen, true), 1, "one upstream WATCH");
    let list = seen
        .lock()
        .expect("log")
        .iter()
        .find(|r| !is_watch(r))
        .map(|r| r.uri.to_string())
        .expect("the LIST");
    assert!(
        list.contains("resourceVersion=41") && list.contains("resourceVersionMatch=Exact"),
        "the informer lists exactly where the first module resumes: {list}"
    );
    assert!(list.contains("labelSelector=app%3Dring"), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_older_than_the_cache_is_410_expired() {
    let closed = Arc::new(AtomicBool::new(false));
    let (client, _seen) = fake_client(move |req| {
        if is_watch(req) {
            Reply::new(200, vec![]).hanging(closed.clone())
        } else {
            // etcd has compacted 41: the exact LIST fails, the informer lists the newest state.
            if req.uri.query().is_some_and(|q| q.contains("Exact")) {
                Reply::new(410, vec![Ok(br#"{"kind":"Status","code":410}"#.to_vec())])
            } else {
                Reply::ok(&list_body(50, &["a"]))
            }
        }
    });
    let upstream = Upstream::new(client, "https://fake.invalid");
    let run = run_shared(upstream, &[("old", watch_guest(&watch_from("41", None)))]).await;
    assert_eq!(
        run.outcome("old"),
        &ModuleOutcome::Exited(0),
        "{}",
        run.output
    );
    assert_eq!(
        events_of(&run, "old"),
        [
            "head",
            r#"ERROR 410 "too old resource version: 41 (50)""#,
            r#"{"kind":"end"}"#
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_from_zero_get_the_state_and_zero_lists_are_served_from_the_cache() {
    let closed = Arc::new(AtomicBool::new(false));
    let (client, seen) = fake_client(move |req| {
        if is_watch(req) {
            Reply::new(
                200,
                vec![Ok(format!("{}\n", event("DELETED", "a", 51)).into_bytes())],
            )
            .hanging(closed.clone())
        } else {
            Reply::ok(&list_body(50, &["b", "a"]))
        }
    });
    let upstream = Upstream::new(client, "https://fake.invalid");
    // The list goes first and starts the shared watch; the watch from "0" follows it.
    let list = common::get(format!(
        "{PATH}?&labelSelector=app%3Dring&resourceVersion=0&limit=500"
    ));
    let list_frame = encode_frame(&list, b"");
    let list_guest = Guest::new(&format!(
        "(drop {})",
        call_with_frame("http_request", &list_frame)
    ))
    .frame(&list_frame)
    .wasm();
    // The two modules start concurrently: the informer lingers, so that whichever subscribes
    // second finds it even if the first was already served and gone.
    let run = run_guests_on(
        upstream,
        shared_settings(Duration::from_secs(30)),
        &[
            ("lister", list_guest),
            ("watcher", watch_guest(&watch_from("0", Some(1)))),
        ],
    )
    .await;
    assert_eq!(
        run.outcome("lister"),
        &ModuleOutcome::Exited(0),
        "{}",
        run.output
    );
    let listed = run.lines_of("lister");
    let body = listed[0]
        .split_once("}{")
        .map(|(_, rest)| format!("{{{rest}"))
        .expect("a response with a body");
    let list: serde_json::Value = serde_json::from_str(&body).expect("list json");
    assert_eq!(list["kind"], "ConfigMapList");
    let rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .expect("a resourceVersion");
    let names: Vec<_> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_owned())
        .collect();
    // Served before or after the DELETED event, consistently with its resourceVersion.
    match rv {
        50 => assert_eq!(names, ["a", "b"]),
        51 => assert_eq!(names, ["b"]),
        other => panic!("unexpected resourceVersion {other}"),
    }
    let watched = events_of(&run, "watcher");
    assert_eq!(watched.first().map(String::as_str), Some("head"));
    assert_eq!(
        watched.last().map(String::as_str),
        Some(r#"{"kind":"end"}"#)
    );
    assert!(
        watched
            == [
                "head",
                "ADDED a 50",
                "ADDED b 50",
                "DELETED a 51",
                r#"{"kind":"end"}"#
            ]
            || watched == ["head", "ADDED b 50", r#"{"kind":"end"}"#],
        "the state as ADDED events, then what follows: {watched:?}"
    );
    assert_eq!(
        count(&seen, false),
        1,
        "the module's list never went upstream"
    );
    assert_eq!(count(&seen, true), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_ends_the_watches_served_from_the_old_state() {
    let lists = Arc::new(AtomicUsize::new(0));
    let closed = Arc::new(AtomicBool::new(false));
    let (client, seen) = {
        let lists = lists.clone();
        fake_client(move |req| {
            if !is_watch(req) {
                let n = lists.fetch_add(1, Ordering::SeqCst);
                return Reply::ok(&list_body(if n == 0 { 41 } else { 60 }, &[]));
            }
            if lists.load(Ordering::SeqCst) == 1 {
                let gone = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}"#;
                Reply::new(
                    200,
                    vec![Ok(
                        format!("{}\n{gone}\n", event("ADDED", "a", 42)).into_bytes()
                    )],
                )
            } else {
                Reply::new(200, vec![]).hanging(closed.clone())
            }
        })
    };
    let upstream = Upstream::new(client, "https://fake.invalid");
    let run = run_shared(upstream, &[("w", watch_guest(&watch_from("41", None)))]).await;
    assert_eq!(
        run.outcome("w"),
        &ModuleOutcome::Exited(0),
        "{}",
        run.output
    );
    let watched = events_of(&run, "w");
    assert_eq!(watched.first().map(String::as_str), Some("head"));
    assert_eq!(
        watched.last().map(String::as_str),
        Some(r#"{"kind":"end"}"#),
        "the relist ended the module's watch: {watched:?}"
    );
    assert!(watched.len() <= 3, "{watched:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        count(&seen, false),
        2,
        "the informer listed again after the 410"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collection_the_host_may_not_list_is_watched_module_by_module() {
    let (client, seen) = fake_client(move |req| {
        if is_watch(req) {
            Reply::new(
                200,
                vec![Ok(format!("{}\n", event("ADDED", "a", 42)).into_bytes())],
            )
        } else {
            Reply::new(403, vec![Ok(br#"{"kind":"Status","code":403}"#.to_vec())])
        }
    });
    let upstream = Upstream::new(client, "https://fake.invalid");
    let guest = watch_guest(&watch_from("41", None));
    let run = run_shared(upstream, &[("a", guest.clone()), ("b", guest)]).await;
    for name in ["a", "b"] {
        assert_eq!(
            run.outcome(name),
            &ModuleOutcome::Exited(0),
            "{}",
            run.output
        );
        assert_eq!(
            events_of(&run, name),
            ["head", "ADDED a 42", r#"{"kind":"end"}"#],
            "{name}"
        );
    }
    assert_eq!(count(&seen, true), 2, "each module watched upstream");
}

/// A guest that watches with `request` once a timer of `after_ms` has fired (op 1), and
/// records the watch's completions.
fn late_watch_guest(request: &WatchRequest, after_ms: u64) -> Vec<u8> {
    let frame = encode_frame(request, b"");
    Guest::new(&format!("(drop (call $delay (i64.const {after_ms})))"))
        .complete(&format!(
            "(if (i64.eq (local.get $op) (i64.const 1)) \
               (then (drop {})) \
               (else (call $record (local.get $op) (local.get $ptr) (local.get $len))))",
            call_with_frame("watch", &frame)
        ))
        .frame(&frame)
        .wasm()
}

/// On a host sharing watches with `cache` over `client`: `early` watches from 41 (and is
/// checked to see 42 and 43 arrive), `late` resumes from 42 two seconds later.
async fn early_then_late_resume(client: kube::Client, cache: CacheSettings) -> common::Run {
    let (mut settings, buffer) = test_settings();
    settings.shared_watches = Some(cache);
    let run = run_guests_on(
        Upstream::new(client, "https://fake.invalid"),
        (settings, buffer),
        &[
            ("early", watch_guest(&watch_from("41", Some(1)))),
            ("late", late_watch_guest(&watch_from("42", Some(1)), 2000)),
        ],
    )
    .await;
    assert_eq!(
        events_of(&run, "early"),
        ["head", "ADDED b 42", "MODIFIED a 43", r#"{"kind":"end"}"#]
    );
    run
}

/// One module watches from 41 and sees 42 and 43 arrive; another resumes from 42 two seconds
/// later. With a history age of 200 ms the events have left the history by then, and the
/// late watch is `410 Expired` at the newest resourceVersion; with the default age (75 s),
/// it gets 43.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_leave_the_history_at_its_age() {
    let late_events = async |history_age: Duration| {
        let (client, _seen) = listed_at_41_then_42_and_43();
        let cache = CacheSettings {
            linger: Duration::from_secs(10),
            history_age,
            ..CacheSettings::default()
        };
        let run = early_then_late_resume(client, cache).await;
        assert_eq!(
            run.outcome("late"),
            &ModuleOutcome::Exited(0),
            "{}",
            run.output
        );
        events_of(&run, "late")
    };
    assert_eq!(
        late_events(Duration::from_millis(200)).await,
        [
            "head",
            r#"ERROR 410 "too old resource version: 42 (43)""#,
            r#"{"kind":"end"}"#
        ]
    );
    assert_eq!(
        late_events(CacheSettings::default().history_age).await,
        ["head", "MODIFIED a 43", r#"{"kind":"end"}"#]
    );
}

/// One module watches from 41 and takes 42 and 43; another resumes from 42 two seconds later.
/// With a grace of 200 ms the events every live watch took have left the cache's history, but
/// not the API server's: the late watch goes upstream, from 42, and gets 43 from there, not a
/// `410`. Without releasing (`releaseReadHistory: false`), the cache serves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_from_released_history_is_served_by_the_api_server() {
    let late_resume = async |history_grace: Option<Duration>| {
        let closed = Arc::new(AtomicBool::new(false));
        let (client, seen) = fake_client(move |req| {
            let from_42 = req
                .uri
                .query()
                .is_some_and(|q| q.contains("resourceVersion=42"));
            match (is_watch(req), from_42) {
                (true, true) => Reply::ok(format!("{}\n", event("MODIFIED", "a", 43)).as_bytes()),
                (true, false) => events_42_and_43(&closed),
                (false, _) => Reply::ok(&list_body(41, &["a"])),
            }
        });
        let cache = CacheSettings {
            linger: Duration::from_secs(10),
            history_grace,
            ..CacheSettings::default()
        };
        let run = early_then_late_resume(client, cache).await;
        assert_eq!(
            events_of(&run, "late"),
            ["head", "MODIFIED a 43", r#"{"kind":"end"}"#],
            "{}",
            run.output
        );
        let watches_from: Vec<String> = seen
            .lock()
            .expect("log")
            .iter()
            .filter(|r| is_watch(r))
            .filter_map(|r| {
                let query = r.uri.query()?;
                let rv = query
                    .split('&')
                    .find_map(|p| p.strip_prefix("resourceVersion="))?;
                Some(rv.to_owned())
            })
            .collect();
        watches_from
    };
    assert_eq!(
        late_resume(Some(Duration::from_millis(200))).await,
        ["41", "42"],
        "the informer's watch, then the late module's own"
    );
    assert_eq!(late_resume(None).await, ["41"], "served from the history");
}

/// A guest doing what kube-runtime's watcher does: a consistent list of the collection
/// (`labelSelector=app=ring`, `limit=500`, no resourceVersion), then, once it is answered
/// (op 1), a watch from `watch_from`. Records every completion.
fn list_then_watch_guest(watch: &WatchRequest) -> Vec<u8> {
    let list = common::get(format!("{PATH}?&labelSelector=app%3Dring&limit=500"));
    let list_frame = encode_frame(&list, b"");
    let watch_frame = encode_frame(watch, b"");
    let mut guest = Guest::new(&format!(
        "(drop {})",
        call_with_frame("http_request", &list_frame)
    ))
    .complete(&format!(
        "(call $record (local.get $op) (local.get $ptr) (local.get $len)) \
         (if (i64.eq (local.get $op) (i64.const 1)) \
           (then (drop (call $watch (i32.const 4096) (i32.const {})))))",
        watch_frame.len()
    ))
    .expect_finals(2)
    .frame(&list_frame);
    guest.extra.push_str(&format!(
        "(data (i32.const 4096) \"{}\")\n",
        wat_bytes(&watch_frame)
    ));
    guest.wasm()
}

/// The LISTs an API server saw, as their query strings.
fn lists(seen: &Mutex<Vec<Seen>>) -> Vec<String> {
    seen.lock()
        .expect("log")
        .iter()
        .filter(|r| !is_watch(r))
        .map(|r| r.uri.query().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_watcher_lists_once_its_list_seeds_the_shared_watch() {
    let (client, seen) = listed_at_41_then_42_and_43();
    let upstream = Upstream::new(client, "https://fake.invalid");
    let run = run_shared(
        upstream,
        &[("lone", list_then_watch_guest(&watch_from("41", Some(1))))],
    )
    .await;
    assert_eq!(
        run.outcome("lone"),
        &ModuleOutcome::Exited(0),
        "{}",
        run.output
    );
    let events = events_of(&run, "lone");
    assert!(
        events[0].contains(r#""resourceVersion":"41""#),
        "its own list: {}",
        events[0]
    );
    assert_eq!(
        events[1..],
        ["head", "ADDED b 42", "MODIFIED a 43", r#"{"kind":"end"}"#],
        "the watch from its list's resourceVersion gets every event after it"
    );
    let lists = lists(&seen);
    assert_eq!(lists.len(), 1, "one LIST, the module's own: {lists:?}");
    assert!(!lists[0].contains("resourceVersion"), "{lists:?}");
    assert_eq!(count(&seen, true), 1, "one upstream WATCH");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_cut_short_does_not_seed_and_the_informer_lists_exactly() {
    // The module's list is a first page (a `continue` token): the informer cannot start from
    // it and LISTs exactly at its resourceVersion.
    let closed = Arc::new(AtomicBool::new(false));
    let (client, seen) = fake_client(move |req| {
        let query = req.uri.query().unwrap_or("");
        if is_watch(req) {
            Reply::new(
                200,
                vec![Ok(format!("{}\n", event("ADDED", "b", 42)).into_bytes())],
            )
            .hanging(closed.clone())
        } else if query.contains("resourceVersionMatch=Exact") {
            Reply::ok(&list_body(41, &["a"]))
        } else {
            let page = String::from_utf8(list_body(41, &["a"]))
                .expect("utf-8")
                .replace(
                    r#""metadata":{"resourceVersion":"41"}"#,
                    r#""metadata":{"resourceVersion":"41","continue":"next"}"#,
                );
            Reply::ok(page.as_bytes())
        }
    });
    let upstream = Upstream::new(client, "https://fake.invalid");
    let run = run_shared(
        upstream,
        &[("paged", list_then_watch_guest(&watch_from("41", Some(1))))],
    )
    .await;
    assert_eq!(
        run.outcome("paged"),
        &ModuleOutcome::Exited(0),
        "{}",
        run.output
    );
    assert_eq!(
        events_of(&run, "paged")[1..],
        ["head", "ADDED b 42", r#"{"kind":"end"}"#]
    );
    let lists = lists(&seen);
    assert_eq!(lists.len(), 2, "{lists:?}");
    assert!(
        lists[1].contains("resourceVersion=41") && lists[1].contains("resourceVersionMatch=Exact"),
        "{lists:?}"
    );
}

/// A streaming list (`sendInitialEvents=true`, bookmarks) from `rv`.
fn stream_from(rv: &str, timeout: Option<u32>) -> WatchRequest {
    WatchRequest {
        bookmarks: true,
        send_initial_events: true,
        ..watch_from(rv, timeout)
    }
}

fn streams_upstream(seen: &Mutex<Vec<Seen>>) -> usize {
    seen.lock()
        .expect("log")
        .iter()
        .filter(|r| {
            r.uri
                .query()
                .is_some_and(|q| q.contains("sendInitialEvents"))
        })
        .count()
}

fn is_streaming(req: &Seen) -> bool {
    req.uri
        .query()
        .is_some_and(|q| q.contains("sendInitialEvents=true"))
}

/// Upstream WATCHes that are not streaming lists (a shared watch's, or a module's own).
fn plain_watches(seen: &Mutex<Vec<Seen>>) -> usize {
    count(seen, true) - streams_upstream(seen)
}

/// A server's answer to a streaming list: `opened` at 41, the bookmark that ends the initial
/// events, then the end of the watch.
fn streamed_by_the_server() -> Reply {
    let bookmark = r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"41","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
    let body = format!("{}\n{bookmark}\n", event("ADDED", "opened", 41));
    Reply::new(200, vec![Ok(body.into_bytes())])
}

/// The module whose streaming list is the host's first: it goes upstream as it is, and its
/// 2xx answer tells the host the API server serves streaming lists (`streamed_by_the_server`
/// answers it).
fn opener() -> (&'static str, Vec<u8>) {
    ("opener", watch_guest(&stream_from("0", None)))
}

/// Whether `name` got the bookmark that ends a streaming list's initial events.
fn got_initial_events_end(run: &common::Run, name: &str) -> bool {
    run.lines_of(name).iter().any(|line| {
        line.contains(r#""type":"BOOKMARK""#)
            && line.contains(r#""k8s.io/initial-events-end":"true""#)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_lists_from_zero_are_served_from_the_store() {
    // The opener's streaming list is answered by the server; then the informer's WATCH sends
    // nothing: each later module's initial events are the LIST's state.
    let closed = Arc::new(AtomicBool::new(false));
    let (client, seen) = fake_client(move |req| {
        if is_streaming(req) {
            streamed_by_the_server()
        } else if is_watch(req) {
            Reply::new(200, vec![]).hanging(closed.clone())
        } else {
            Reply::ok(&list_body(41, &["b", "a"]))
        }
    });
    let upstream = Upstream::new(client, "https://fake.invalid");
    let guest = late_watch_guest(&stream_from("0", Some(1)), 500);
    let run = run_shared(upstream, &[opener(), ("s1", guest.clone()), ("s2", guest)]).await;
    assert_eq!(
        events_of(&run, "opener"),
        [
            "head",
            "ADDED opened 41",
            "BOOKMARK  41",
            r#"{"kind":"end"}"#
        ],
        "the host's first streaming list, answered by the server"
    );
    for name in ["s1", "s2"] {
        assert_eq!(
            run.outcome(name),
            &ModuleOutcome::Exited(0),
            "{}",
            run.output
        );
        assert_eq!(
            events_of(&run, name),
            [
                "head",
                "ADDED a 41",
                "ADDED b 41",
                "BOOKMARK  41",
                r#"{"kind":"end"}"#
            ],
            "{name}: the objects, then the end of the initial events"
        );
        assert!(got_initial_events_end(&run, name), "{}", run.output);
    }
    assert_eq!(count(&seen, false), 1, "one upstream LIST");
    assert_eq!(plain_watches(&seen), 1, "one upstream WATCH");
    assert_eq!(
        streams_upstream(&seen),
        1,
        "the opener's streaming list alone upstream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_lists_a_server_refuses_are_refused_to_every_module() {
    // The WatchList feature gate off: the server answers each streaming list with a 422, and
    // each module's goes upstream as it is and gets it; nothing is shared.
    let refusal = r#"{"kind":"Status","code":422,"reason":"Invalid","message":"sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"}"#;
    let (client, seen) = fake_client(move |req| {
        if is_streaming(req) {
            Reply::new(422, vec![Ok(refusal.as_bytes().to_vec())])
        } else {
            Reply::ok(&list_body(41, &["a"]))
        }
    });
    let upstream = Upstream::new(client, "https://fake.invalid");
    let guest = watch_guest(&stream_from("0", Some(1)));
    let run = run_shared(upstream, &[("s1", guest.clone()), ("s2", guest)]).await;
    for name in ["s1", "s2"] {
        assert_eq!(
            run.outcome(name),
            &ModuleOutcome::Exited(0),
            "{}",
            run.output
        );
        let lines = run.lines_of(name).join("\n");
        assert!(
            lines.contains(r#""status":422"#) && lines.contains("WatchList feature gate"),
            "{name} got the server's refusal: {lines}"
        );
    }
    assert_eq!(
        streams_upstream(&seen),
        2,
        "each module's streaming list upstream"
    );
    assert_eq!(count(&seen, false), 0, "no shared LIST");
    assert_eq!(plain_watches(&seen), 0, "no shared WATCH");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consistent_streaming_list_of_an_older_shared_watch_reads_a_consistent_list() {
    // `early` starts the shared watch (LIST at 41, then 42 and 43); `late` asks a second
    // later for a consistent state (resourceVersion ""): the store's LIST is older than its
    // request, so the host reads a consistent LIST (at 45) and serves the store's events after it.
    let closed = Arc::new(AtomicBool::new(false));
    let lists = Arc::new(AtomicUsize::new(0));
    let (client, seen) = fake_client(move |req| {
        if is_streaming(req) {
            streamed_by_the_server()
        } else if is_watch(req) {
            events_42_and_43(&closed)
        } else if lists.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::ok(&list_body(41, &["a"]))
        } else {
            Reply::ok(&list_body(45, &["a", "c"]))
        }
    });
    let run = run_guests_on(
        Upstream::new(client, "https://fake.invalid"),
        shared_settings(Duration::from_secs(30)),
        &[
            ("early", watch_guest(&watch_from("0", Some(2)))),
            opener(),
            ("late", late_watch_guest(&stream_from("", Some(1)), 1000)),
        ],
    )
    .await;
    assert_eq!(
        run.outcome("late"),
        &ModuleOutcome::Exited(0),
        "{}",
        run.output
    );
    assert_eq!(
        events_of(&run, "late"),
        [
            "head",
            "ADDED a 45",
            "ADDED c 45",
            "BOOKMARK  45",
            r#"{"kind":"end"}"#
        ]
    );
    assert!(got_initial_events_end(&run, "late"));
    assert_eq!(
        count(&seen, false),
        2,
        "the shared LIST and the consistent one"
    );
    assert_eq!(plain_watches(&seen), 1, "one upstream WATCH");
    assert_eq!(
        streams_upstream(&seen),
        1,
        "the opener's streaming list alone upstream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_list_newer_than_the_api_server_state_goes_upstream() {
    // resourceVersionMatch=NotOlderThan 45, but the API server's state is at 41 (the shared
    // LIST and the consistent one): the API server answers such a watch itself. (The
    // opener's streaming list, the host's first, went upstream before it.)
    let closed = Arc::new(AtomicBool::new(false));
    let (client, seen) = fake_client(move |req| {
        let from_45 = req
            .uri
            .query()
            .is_some_and(|q| q.contains("resourceVersion=45"));
        if is_streaming(req) && !from_45 {
            streamed_by_the_server()
        } else if is_streaming(req) {
            let line = event("ADDED", "upstream", 46);
            Reply::new(200, vec![Ok(format!("{line}\n").into_bytes())])
        } else if is_watch(req) {
            Reply::new(200, vec![]).hanging(closed.clone())
        } else {
            Reply::ok(&list_body(41, &["a"]))
        }
    });
    let upstream = Upstream::new(client, "https://fake.invalid");
    let run = run_shared(
        upstream,
        &[
            opener(),
            ("ahead", late_watch_guest(&stream_from("45", None), 500)),
        ],
    )
    .await;
    assert_eq!(
        run.outcome("ahead"),
        &ModuleOutcome::Exited(0),
        "{}",
        run.output
    );
    assert_eq!(
        events_of(&run, "ahead"),
        ["head", "ADDED upstream 46", r#"{"kind":"end"}"#]
    );
    assert_eq!(
        streams_upstream(&seen),
        2,
        "the opener's and the module's own streaming list"
    );
    let stream = seen
        .lock()
        .expect("log")
        .iter()
        .filter(|r| is_streaming(r))
        .nth(1)
        .map(|r| r.uri.to_string())
        .expect("sent");
    assert!(
        stream.contains("resourceVersion=45")
            && stream.contains("resourceVersionMatch=NotOlderThan"),
        "{stream}"
    );
}
