//! Misbehaves on purpose, so the end-to-end tests can check that the host stops and restarts
//! it while other modules go on. It first opens a watch on ConfigMaps in its default
//! namespace (so the tests can see the host close it), prints `hostile: watching, now MODE`,
//! then, by `HOSTILE_MODE`:
//! - `loop`: spins forever without yielding;
//! - `oom`: allocates 1 MiB blocks and keeps them, forever;
//! - `panic`: panics;
//! - `garbage`: calls the `http_request` import with bytes that are not an ABI frame
//!   (wasm32 only).

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
