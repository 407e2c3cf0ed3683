//! Links the host binary as the host's memory needs it (the book: Architecture, host-shim,
//! "Shipping the host"):
//!
//! - Position-dependent (`-no-pie`), unless `KUBE_WASM_HOST_PIE=1`: a position-independent
//!   executable's loader writes ≈ 57,000 addresses into `.data.rel.ro` (vtables, string
//!   slices, panic locations) at start-up, which makes its ≈ 0.9 MiB private anonymous copies
//!   for the process's life; at a fixed address they stay clean pages of the file, which the
//!   host releases between events like its text. The cost: the executable's own addresses are
//!   not randomised (its libraries, heap, stacks, guests' memories and compiled code still are).
//! - Its hot functions together (`hot-text.order`, made by `scripts/hot-text.sh`): the host
//!   releases its code between events and the kernel maps it back 64 KiB at a time, so the
//!   fewer blocks its steady state runs in, the less of the binary stays resident. The linker
//!   skips names this build does not have (another profile, changed dependencies). Not with
//!   `KUBE_WASM_HOST_HOT_TEXT=0` (the benchmark's build without the list).

fn main() {
    println!("cargo:rerun-if-changed=hot-text.order");
    println!("cargo:rerun-if-env-changed=KUBE_WASM_HOST_PIE");
    println!("cargo:rerun-if-env-changed=KUBE_WASM_HOST_HOT_TEXT");
    let target = std::env::var("TARGET").unwrap_or_default();
    let pie = std::env::var("KUBE_WASM_HOST_PIE").is_ok_and(|value| value == "1");
    // glibc targets only: musl's are linked static-pie by default, another link mode.
    if target.contains("-linux-gnu") && !pie {
        println!("cargo:rustc-link-arg-bin=host-shim=-no-pie");
    }
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        return;
    };
    let order = std::path::Path::new(&dir).join("hot-text.order");
    // rustc 1.90 and later (the workspace needs 1.95) link this target with lld, which reads
    // an ordering file.
    let lld = target == "x86_64-unknown-linux-gnu";
    let unordered = std::env::var("KUBE_WASM_HOST_HOT_TEXT").is_ok_and(|value| value == "0");
    if lld && order.exists() && !unordered {
        println!(
            "cargo:rustc-link-arg-bin=host-shim=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=host-shim=-Wl,--no-warn-symbol-ordering");
    }
}
