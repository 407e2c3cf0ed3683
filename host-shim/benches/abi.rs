//! Micro-benchmarks of the host's ABI paths, so regressions show up in numbers:
//!
//! - `module/instantiate_start_exit`: a module whose `_start` exits at once — instantiation
//!   from the pre-instantiated module, the ABI version check, `_start`, exit; the fixed cost
//!   inside every figure below;
//! - `abi_round_trip/http_request`: a guest making [`ROUND_TRIPS`] `http_request`s one after
//!   another, each issued from the completion of the previous one: submit → host op task →
//!   `kube::Client` (a fake in-process transport, no network) → completion →
//!   `kube_wasm_alloc` + `kube_wasm_complete` (guest wakeup);
//! - `watch_delivery/<bytes>`: one watch whose response carries [`EVENTS`] events of the
//!   given size: line framing, one `watch_event` completion per event, copy into the guest.
//!
//! The guests are hand-written WAT (`tests/common`). Run with
//! `cargo bench -p host-shim --bench abi`; not part of the test command.

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::{Guest, Reply, call_with_frame, fake_client, test_settings};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use host_shim::{Host, LoadedModule, ModuleOutcome, StopHandle, Upstream};
use kube_wasm_abi::{HttpRequest, ResponseMode, WatchRequest, encode_frame};

/// Round trips per run of the round-trip guest.
const ROUND_TRIPS: u32 = 500;
/// Events per watch of the delivery benchmark.
const EVENTS: usize = 200;

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => panic!("tokio runtime: {err}"),
    }
}

/// A host on `upstream` with `wasm` loaded.
fn host_with(
    rt: &tokio::runtime::Runtime,
    upstream: Upstream,
    wasm: &[u8],
) -> (Host, LoadedModule) {
    let _guard = rt.enter();
    let (settings, _output) = test_settings();
    let host = Host::new(upstream, settings).expect("host");
    let module = host.load_bytes("bench", wasm).expect("compiles");
    (host, module)
}

/// Runs `module` `iters` times to its exit, returning the total time.
fn run_times(
    rt: &tokio::runtime::Runtime,
    host: &Host,
    module: &LoadedModule,
    iters: u64,
) -> Duration {
    rt.block_on(async {
        let stop = StopHandle::new();
        let start = Instant::now();
        for _ in 0..iters {
            let outcome = host.run_module(module.clone(), &stop).await;
            assert_eq!(black_box(outcome), ModuleOutcome::Exited(0));
        }
        start.elapsed()
    })
}

fn lifecycle(c: &mut Criterion) {
    let rt = runtime();
    let client = {
        let _guard = rt.enter();
        fake_client(|_| Reply::new(404, vec![Ok(b"{}".to_vec())])).0
    };
    let wasm = Guest::new("(call $proc_exit (i32.const 0))").wasm();
    let (host, module) = host_with(&rt, Upstream::new(client, "https://fake.invalid"), &wasm);
    c.benchmark_group("module")
        .bench_function("instantiate_start_exit", |b| {
            b.iter_custom(|iters| run_times(&rt, &host, &module, iters));
        });
}

fn round_trip(c: &mut Criterion) {
    let rt = runtime();
    let client = {
        let _guard = rt.enter();
        fake_client(|_| Reply::ok(b"{\"kind\":\"Status\"}")).0
    };
    let request = HttpRequest {
        method: "GET".into(),
        uri: "/api/v1/namespaces/default/configmaps/a".into(),
        headers: Vec::new(),
        response: ResponseMode::Whole,
    };
    let frame = encode_frame(&request, b"");
    let call = call_with_frame("http_request", &frame);
    let wasm = Guest::new(&format!(
        "(global.set $left (i32.const {ROUND_TRIPS})) (drop {call})"
    ))
    .complete(&format!(
        "(if (call $is_final (local.get $ptr)) (then \
           (global.set $left (i32.sub (global.get $left) (i32.const 1))) \
           (if (i32.eqz (global.get $left)) (then (call $proc_exit (i32.const 0)))) \
           (drop {call})))"
    ))
    .frame(&frame);
    let wasm = {
        let mut guest = wasm;
        guest
            .extra
            .push_str("(global $left (mut i32) (i32.const 0))\n");
        guest.wasm()
    };
    let (host, module) = host_with(&rt, Upstream::new(client, "https://fake.invalid"), &wasm);
    let mut group = c.benchmark_group("abi_round_trip");
    group.throughput(Throughput::Elements(u64::from(ROUND_TRIPS)));
    group.bench_function(BenchmarkId::new("http_request", ROUND_TRIPS), |b| {
        b.iter_custom(|iters| run_times(&rt, &host, &module, iters));
    });
    group.finish();
}

/// One watch event line of about `size` bytes (a ConfigMap whose data pads it).
fn event_line(i: usize, size: usize) -> Vec<u8> {
    let head = format!(
        "{{\"type\":\"MODIFIED\",\"object\":{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"cm\",\"namespace\":\"default\",\"resourceVersion\":\"{}\"}},\"data\":{{\"x\":\"",
        100 + i
    );
    let tail = "\"}}}\n";
    let pad = size.saturating_sub(head.len() + tail.len());
    let mut line = head.into_bytes();
    line.extend(std::iter::repeat_n(b'a', pad));
    line.extend_from_slice(tail.as_bytes());
    line
}

fn watch_delivery(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("watch_delivery");
    group.sample_size(20);
    for size in [256usize, 4 << 10, 64 << 10] {
        let body: Vec<u8> = (0..EVENTS).flat_map(|i| event_line(i, size)).collect();
        let total = body.len() as u64;
        let client = {
            let _guard = rt.enter();
            fake_client(move |_| {
                // Chunks of 16 KiB: events are framed across transport chunks, as on the wire.
                let chunks = body.chunks(16 << 10).map(|c| Ok(c.to_vec())).collect();
                Reply::new(200, chunks)
            })
            .0
        };
        let request = WatchRequest {
            path: "/api/v1/namespaces/default/configmaps".into(),
            label_selector: None,
            field_selector: None,
            timeout_seconds: None,
            bookmarks: true,
            send_initial_events: false,
            resource_version: "1".into(),
            metadata_only: false,
        };
        let frame = encode_frame(&request, b"");
        let wasm = Guest::new(&format!("(drop {})", call_with_frame("watch", &frame)))
            .complete(
                "(if (call $is_final (local.get $ptr)) (then (call $proc_exit (i32.const 0))))",
            )
            .frame(&frame)
            .wasm();
        let (host, module) = host_with(&rt, Upstream::new(client, "https://fake.invalid"), &wasm);
        group.throughput(Throughput::Bytes(total));
        group.bench_function(BenchmarkId::new("events_of_bytes", size), |b| {
            b.iter_custom(|iters| run_times(&rt, &host, &module, iters));
        });
    }
    group.finish();
}

criterion_group!(benches, lifecycle, round_trip, watch_delivery);
criterion_main!(benches);
