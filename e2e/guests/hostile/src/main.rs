//! Misbehaves on purpose, so the end-to-end tests can check that the host stops and restarts
//! it while other modules go on. It first opens a watch on ConfigMaps in its default
//! namespace (so the tests can see the host close it), prints `hostile: watching, now MODE`,
//! then, by `HOSTILE_MODE`:
//! - `loop`: spins forever without yielding;
//! - `oom`: allocates 1 MiB blocks and keeps them, forever;
//! - `panic`: panics;
//! - `garbage`: calls the `http_request` import with bytes that are not an ABI frame
//!   (wasm32 only);
//! - `tries`: sends each line of `HOSTILE_TRIES` (`IMPORT METHOD URI`, IMPORT one of `http`,
//!   `watch`, `stream`) straight through that import, spelled as given, prints
//!   `hostile: IMPORT METHOD URI -> OUTCOME` (the first completion's status, or
//!   `error <code>`), then `hostile: tries done` (wasm32 only);
//! - `flood`: floods one of the host's per-module quotas, by `HOSTILE_FLOOD` (wasm32 only):
//!   `delays` (hour-long timers), `watches` (watches of ever new label selectors), `requests`
//!   (GETs), `bodies` (16 MiB POSTs) or `logs` (lines as fast as it can). For the first four,
//!   `HOSTILE_TASKS` tasks (default 256) each start an op through the raw import, await its
//!   first completion and start the next; each prints `hostile: flood KIND refused N (OUTCOME)`
//!   at every 100th refusal, where a refusal is a `429` response or an `error` of code `quota`.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, WatchParams};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mode = std::env::var("HOSTILE_MODE")?;
    let client = Client::try_default().await?;
    let config_maps: Api<ConfigMap> = Api::default_namespaced(client);
    let _watch = config_maps
        .watch(&WatchParams::default(), "0")
        .await?
        .boxed();
    println!("hostile: watching, now {mode}");
    match mode.as_str() {
        "loop" => {
            let mut spins = 0u64;
            loop {
                spins = std::hint::black_box(spins.wrapping_add(1));
            }
        }
        "oom" => {
            let mut hoard = Vec::new();
            loop {
                hoard.push(std::hint::black_box(vec![1u8; 1 << 20]));
            }
        }
        "panic" => panic!("hostile: panicking on purpose"),
        "garbage" => garbage(),
        "tries" => tries(&std::env::var("HOSTILE_TRIES")?).await,
        "flood" => flood(&std::env::var("HOSTILE_FLOOD")?).await,
        other => anyhow::bail!("unknown HOSTILE_MODE {other:?}"),
    }
}

#[cfg(target_arch = "wasm32")]
fn garbage() -> anyhow::Result<()> {
    #[link(wasm_import_module = "kube_wasm_v1")]
    unsafe extern "C" {
        #[link_name = "http_request"]
        fn http_request(ptr: *const u8, len: usize) -> u64;
    }
    let junk = b"\x05\x00\x00\x00hello, not a frame";
    // SAFETY: the import reads `junk.len()` bytes of a live slice during the call.
    let op = unsafe { http_request(junk.as_ptr(), junk.len()) };
    anyhow::bail!("the host accepted garbage as op {op}")
}

#[cfg(not(target_arch = "wasm32"))]
fn garbage() -> anyhow::Result<()> {
    anyhow::bail!("garbage ABI calls exist only in wasm32")
}

#[cfg(target_arch = "wasm32")]
async fn tries(lines: &str) -> anyhow::Result<()> {
    use kube_wasm_abi::{Completion, HttpRequest, ResponseMode, StreamOpen, WatchRequest};
    use kube_wasm_guest::Op;

    for line in lines.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let mut words = line.split(' ');
        let (Some(import), Some(method), Some(uri)) = (words.next(), words.next(), words.next())
        else {
            anyhow::bail!("a try is `IMPORT METHOD URI`, not {line:?}");
        };
        let mut op = match import {
            "http" => Op::http(
                &HttpRequest {
                    method: method.into(),
                    uri: uri.into(),
                    headers: vec![("accept".into(), "application/json".into())],
                    response: ResponseMode::Whole,
                },
                b"{}",
            ),
            "watch" => Op::watch(&WatchRequest {
                path: uri.into(),
                label_selector: None,
                field_selector: None,
                timeout_seconds: Some(5),
                bookmarks: false,
                send_initial_events: false,
                resource_version: String::new(),
                metadata_only: false,
            }),
            "stream" => Op::stream_open(&StreamOpen {
                method: method.into(),
                uri: uri.into(),
                headers: Vec::new(),
                credit: 1,
                keepalive_secs: 0,
            }),
            other => anyhow::bail!("unknown import {other:?}"),
        };
        let outcome = match op.next().await.map(|d| d.completion) {
            Some(Completion::Response { status, .. } | Completion::Head { status, .. }) => {
                status.to_string()
            }
            Some(Completion::Error(err)) => format!("error {:?}", err.code),
            other => format!("{other:?}"),
        };
        println!("hostile: {line} -> {outcome}");
    }
    println!("hostile: tries done");
    Ok(())
}

#[cfg(not(target_arch = "wasm32"))]
async fn tries(_lines: &str) -> anyhow::Result<()> {
    anyhow::bail!("raw import calls exist only in wasm32")
}

#[cfg(target_arch = "wasm32")]
async fn flood(kind: &str) -> anyhow::Result<()> {
    use kube_wasm_abi::{Completion, ErrorCode, HttpRequest, ResponseMode, WatchRequest};
    use kube_wasm_guest::Op;
    use std::cell::Cell;
    use std::rc::Rc;

    let namespace = std::env::var("KUBE_WASM_DEFAULT_NAMESPACE")?;
    if kind == "logs" {
        let mut n = 0u64;
        loop {
            for _ in 0..500 {
                n += 1;
                println!("hostile: log line {n}");
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
    let tasks: usize = std::env::var("HOSTILE_TASKS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256);
    let big = Rc::new(vec![b' '; 16 << 20]);
    let refused = Rc::new(Cell::new(0u64));
    let started = Rc::new(Cell::new(0u64));
    let kind: Rc<str> = kind.into();
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (kind, big, refused, started) =
            (kind.clone(), big.clone(), refused.clone(), started.clone());
        let namespace = namespace.clone();
        handles.push(tokio::task::spawn_local(async move {
            loop {
                let n = started.get() + 1;
                started.set(n);
                let mut op = match &*kind {
                    "delays" => Op::delay(3_600_000),
                    "watches" => Op::watch(&WatchRequest {
                        path: format!("/api/v1/namespaces/{namespace}/configmaps"),
                        label_selector: Some(format!("flood={n}")),
                        field_selector: None,
                        timeout_seconds: Some(3600),
                        bookmarks: false,
                        send_initial_events: false,
                        resource_version: String::new(),
                        metadata_only: false,
                    }),
                    "requests" => Op::http(
                        &HttpRequest {
                            method: "GET".into(),
                            uri: format!("/api/v1/namespaces/{namespace}/configmaps?limit=1"),
                            headers: Vec::new(),
                            response: ResponseMode::Whole,
                        },
                        b"",
                    ),
                    "bodies" => Op::http(
                        &HttpRequest {
                            method: "POST".into(),
                            uri: format!("/api/v1/namespaces/{namespace}/configmaps"),
                            headers: vec![("content-type".into(), "application/json".into())],
                            response: ResponseMode::Whole,
                        },
                        &big,
                    ),
                    other => panic!("unknown HOSTILE_FLOOD {other:?}"),
                };
                let outcome = match op.next_delivery().await.map(|d| d.completion) {
                    Some(Completion::Response { status: 429, .. }) => Some("429".to_owned()),
                    Some(Completion::Error(e)) if e.code == ErrorCode::Quota => {
                        Some(format!("quota: {}", e.message))
                    }
                    _ => None,
                };
                if let Some(outcome) = outcome {
                    let total = refused.get() + 1;
                    refused.set(total);
                    if total % 100 == 1 {
                        println!("hostile: flood {kind} refused {total} ({outcome})");
                    }
                } else if &*kind == "watches" {
                    // An admitted watch is held open, as a leaking controller would.
                    while op.next_delivery().await.is_some() {}
                }
            }
        }));
    }
    // The tasks never end; the module floods until the host stops it.
    futures::future::try_join_all(handles).await?;
    Ok(())
}

#[cfg(not(target_arch = "wasm32"))]
async fn flood(_kind: &str) -> anyhow::Result<()> {
    anyhow::bail!("raw import calls exist only in wasm32")
}
