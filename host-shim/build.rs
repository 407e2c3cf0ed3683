//! Links the host's hot functions together (`hot-text.order`, made by `scripts/hot-text.sh`):
//! the host releases its code between events and the kernel maps it back 64 KiB at a time, so
//! the fewer blocks its steady state runs in, the less of the binary stays resident. The linker
//! skips names this build does not have (another profile, changed dependencies).

fn main() {
    println!("cargo:rerun-if-changed=hot-text.order");
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        return;
    };
    let order = std::path::Path::new(&dir).join("hot-text.order");
    // rustc 1.90 and later (the workspace needs 1.95) link this target with lld, which reads
    // an ordering file.
    let lld = std::env::var("TARGET").is_ok_and(|target| target == "x86_64-unknown-linux-gnu");
    if lld && order.exists() {
        println!(
            "cargo:rustc-link-arg-bin=host-shim=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=host-shim=-Wl,--no-warn-symbol-ordering");
    }
}
