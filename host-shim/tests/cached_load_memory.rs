//! Loading a module from the host's cache (`Host::load_file`) holds no copy of its bytes:
//! the file is hashed as it is read, and what the module's check found and its compiled form
//! are both in the cache, so a host starting large modules (a Go controller is 60 MiB of
//! wasm) needs little more memory at start-up than once they run. This test binary counts
//! its heap with a global allocator of its own.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{Guest, cache_dir, files_with_extension as files, host_with_cache, runs_to_exit};

/// The system allocator, counting the bytes allocated now and the most since the last
/// [`Counting::reset_peak`].
struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

impl Counting {
    /// Starts a new peak from the bytes allocated now; returns them.
    fn reset_peak() -> usize {
        let now = NOW.load(Ordering::SeqCst);
        PEAK.store(now, Ordering::SeqCst);
        now
    }

    fn grew(by: usize) {
        let now = NOW.fetch_add(by, Ordering::SeqCst) + by;
        PEAK.fetch_max(now, Ordering::SeqCst);
    }
}

// SAFETY: every call goes to `System` with the caller's arguments; the counters only add.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            Self::grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        NOW.fetch_sub(layout.size(), Ordering::SeqCst);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            NOW.fetch_sub(layout.size(), Ordering::SeqCst);
            Self::grew(new_size);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A bulk custom section's size: far above what loading a small module allocates.
const BULK: usize = 16 << 20;

/// A guest that `prepare` rewrites (it has an unexported mutable global) and whose func refs
/// are profiled (it calls through its table), made large by a custom section, which every
/// rewrite copies and compiling drops.
fn large_guest() -> Vec<u8> {
    let mut guest = Guest::new(
        "(global.set $counter (i32.add (global.get $counter) (i32.const 1)))
         (drop (call_indirect (type $nullary) (i32.const 1)))
         (drop (call $delay (i64.const 10)))",
    );
    guest.extra = r#"
      (global $counter (mut i32) (i32.const 0))
      (type $nullary (func (result i32)))
      (table 2 funcref)
      (elem (i32.const 0) func $f0 $f1)
      (func $f0 (result i32) (i32.const 0))
      (func $f1 (result i32) (i32.const 1))"#
        .into();
    let mut wasm = guest.wasm();
    let bulk = wasm_encoder::CustomSection {
        name: "bulk".into(),
        data: vec![0xa5; BULK].into(),
    };
    wasm.push(wasm_encoder::Section::id(&bulk));
    wasm_encoder::Encode::encode(&bulk, &mut wasm);
    wasm
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_module_is_loaded_without_its_bytes_in_memory() {
    let cache = cache_dir();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("large.wasm");
    let wasm = large_guest();
    std::fs::write(&file, &wasm).expect("write");

    // The first host runs the instrumented form and writes the func-ref profile; the next
    // compiles the ordered form; the third finds it in the cache.
    let first = host_with_cache(cache.path());
    let module = first.load_file("m", &file).expect("loads");
    assert!(module.func_ref_profile().is_some(), "profiled");
    runs_to_exit(&first, module).await;
    let second = host_with_cache(cache.path());
    let module = second.load_file("m", &file).expect("loads");
    assert!(module.func_ref_profile().is_none(), "ordered");
    drop(module);

    let third = host_with_cache(cache.path());
    let before = Counting::reset_peak();
    let module = third.load_file("m", &file).expect("loads");
    let peak = PEAK.load(Ordering::SeqCst) - before;
    assert!(
        peak < wasm.len() / 4,
        "loading a cached {} byte module allocated up to {peak} bytes at once",
        wasm.len()
    );
    runs_to_exit(&third, module).await;

    // A record that does not carry the cache's tag is not used: the module is checked again
    // (holding its bytes), and runs.
    for record in files(cache.path(), "record") {
        std::fs::write(record, b"{\"No\":\"forged\"}").expect("overwrite");
    }
    let fourth = host_with_cache(cache.path());
    let before = Counting::reset_peak();
    let module = fourth.load_file("m", &file).expect("loads");
    let peak = PEAK.load(Ordering::SeqCst) - before;
    assert!(peak >= wasm.len(), "read again: {peak} bytes");
    assert!(
        matches!(
            module.suspendable(),
            host_shim::runtime::suspend::Suspendable::Yes(_)
        ),
        "the check, not the forged record"
    );
    runs_to_exit(&fourth, module).await;
}
