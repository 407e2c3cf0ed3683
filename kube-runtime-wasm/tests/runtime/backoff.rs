//! Backoff curves, and the host timers `StreamBackoff` asks for between errors.

use super::support::*;
use kube_runtime_wasm::WatchStreamExt;
use kube_runtime_wasm::utils::Backoff;
use kube_runtime_wasm::watcher::{Config, DefaultBackoff, ExponentialBackoff, watcher};
use std::time::Duration;

#[test]
fn default_backoff_doubles_from_800ms_to_30s_with_jitter() {
    let mut backoff = DefaultBackoff::default();
    for base in [
        800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000, 30_000,
    ] {
        let base = Duration::from_millis(base);
        let delay = backoff.next().expect("the default backoff never gives up");
        assert!(
            delay >= base && delay < base * 2,
            "{delay:?} not in [{base:?}, 2×{base:?})"
        );
    }
    backoff.reset();
    let delay = backoff.next().expect("never gives up");
    assert!(delay >= Duration::from_millis(800) && delay < Duration::from_millis(1600));
}

#[test]
fn exponential_backoff_from_a_builder_and_reset() {
    let builder = backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_millis(500))
        .with_max_times(4);
    let mut backoff = ExponentialBackoff::from(builder);
    // backon multiplies in f32: compare whole milliseconds.
    let delays: Vec<_> = backoff.by_ref().map(|d| d.as_millis()).collect();
    assert_eq!(delays, [100, 200, 400, 500]);
    backoff.reset();
    assert_eq!(backoff.next(), Some(Duration::from_millis(100)));
}

fn no_jitter(max_times: usize) -> ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_secs(1))
        .with_max_times(max_times)
        .into()
}

#[test]
fn stream_backoff_waits_on_host_timers_and_resets_after_success() {
    let (host, client) = setup();
    let stream = watcher(configmaps(client), Config::default()).backoff(no_jitter(100));
    let mut d = Driver::start(host, stream, describe);
    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[], "10", None));
    // Refused watches: the delays grow, and nothing is retried before the timer fires.
    for expected in [100, 200, 400] {
        let (watch, _) = d.expect_watch();
        d.respond(watch, 403, &status(403, "Forbidden"));
        let (timer, millis) = d.expect_delay();
        // backon computes in f32: 200 ms may come out a hair above, which the host timer
        // rounds up to the next whole millisecond.
        assert!((expected..=expected + 1).contains(&millis), "{millis}");
        assert!(d.nothing_pending(), "no retry before the backoff elapsed");
        d.elapse(timer);
    }
    // A success resets the curve.
    let (watch, _) = d.expect_watch();
    d.establish(watch);
    d.event(watch, &watch_event("ADDED", cm("a", "11")));
    d.event(watch, &error_event(500, "InternalError"));
    let (_, millis) = d.expect_delay();
    assert_eq!(millis, 100);
    let log = d.take_log();
    assert_eq!(
        log.iter()
            .filter(|l| l.starts_with("Err WatchStartFailed"))
            .count(),
        3
    );
    assert_eq!(log[log.len() - 2..], ["Apply(a)", "Err WatchError 500"]);
}

#[test]
fn stream_backoff_ends_the_stream_when_the_backoff_gives_up() {
    let (host, client) = setup();
    let stream = watcher(configmaps(client), Config::default()).backoff(no_jitter(1));
    let mut d = Driver::start(host, stream, describe);
    let (list, _) = d.expect_list();
    d.respond(list, 200, &page(&[], "10", None));
    let (watch, _) = d.expect_watch();
    d.respond(watch, 403, &status(403, "Forbidden"));
    let (timer, _) = d.expect_delay();
    d.elapse(timer);
    let (watch, _) = d.expect_watch();
    d.respond(watch, 403, &status(403, "Forbidden"));
    assert_eq!(
        d.take_log(),
        [
            "Init",
            "InitDone",
            "Err WatchStartFailed Api 403",
            "Err WatchStartFailed Api 403",
            "END"
        ]
    );
}

#[test]
fn default_backoff_asks_the_host_for_a_jittered_first_delay() {
    let (host, client) = setup();
    let stream = watcher(configmaps(client), Config::default()).default_backoff();
    let mut d = Driver::start(host, stream, describe);
    let (list, _) = d.expect_list();
    d.respond(list, 500, &status(500, "InternalError"));
    let (_, millis) = d.expect_delay();
    assert!((800..1600).contains(&millis), "{millis}");
}

#[test]
fn default_backoff_starts_over_after_120s_without_errors() {
    let (host, _) = setup();
    let mut backoff = DefaultBackoff::default();
    let in_range = |delay: Duration, base_millis: u64| {
        let base = Duration::from_millis(base_millis);
        delay >= base && delay < base * 2
    };
    for base in [800, 1600, 3200] {
        assert!(in_range(backoff.next().expect("never gives up"), base));
    }
    // Two minutes since the last retry is not yet a quiet period.
    host.advance(Duration::from_secs(120));
    assert!(in_range(backoff.next().expect("never gives up"), 6400));
    // More than two minutes is: the next error counts as a first one.
    host.advance(Duration::from_millis(120_001));
    assert!(in_range(backoff.next().expect("never gives up"), 800));
}
