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
//!   `error <code>`), then `hostile: tries done` (wasm32 only).

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
