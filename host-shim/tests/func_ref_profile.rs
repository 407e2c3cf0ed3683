//! The func-ref profile (`host_shim::runtime::func_refs`): with a cache, a module's first
//! host runs it instrumented and writes which table slots it called through when the module
//! ends; the next host compiles the ordered form from that profile and runs it. A profile
//! that is not one is made again.

mod common;

use common::{
    Guest, cache_dir, files_with_extension as files, host_with_cache, idle_upstream, runs_to_exit,
    test_settings,
};
use host_shim::Host;
use host_shim::runtime::func_refs::profile::HEADER;

/// A guest that calls through slots 1 and 3 of its four-slot table (twice through 3), then
/// exits at its delay's completion.
fn calling_guest() -> Vec<u8> {
    let mut guest = Guest::new(
        "(drop (call_indirect (type $nullary) (i32.const 1)))
         (drop (call_indirect (type $nullary) (i32.const 3)))
         (drop (call_indirect (type $nullary) (i32.const 3)))
         (drop (call $delay (i64.const 10)))",
    );
    guest.extra = r#"
      (type $nullary (func (result i32)))
      (table 4 funcref)
      (elem (i32.const 0) func $f0 $f1 $f2 $f3)
      (func $f0 (result i32) (i32.const 0))
      (func $f1 (result i32) (i32.const 1))
      (func $f2 (result i32) (i32.const 2))
      (func $f3 (result i32) (i32.const 3))"#
        .into();
    guest.wasm()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_run_profiles_and_the_next_host_runs_the_ordered_module() {
    let cache = cache_dir();
    let wasm = calling_guest();

    let first = host_with_cache(cache.path());
    let module = first.load_bytes("m", &wasm).expect("loads");
    let profile = module.func_ref_profile().expect("profiled").clone();
    assert!(!profile.is_written());
    assert!(files(cache.path(), "funcrefs").is_empty());
    runs_to_exit(&first, module).await;
    assert!(profile.is_written(), "written when the module ended");
    assert_eq!(profile.slots(), [1, 3]);
    let profiles = files(cache.path(), "funcrefs");
    let [written] = profiles.as_slice() else {
        panic!("one profile file: {profiles:?}");
    };
    let text = std::fs::read_to_string(written).expect("profile");
    assert_eq!(text, format!("{HEADER}\n1\n3\n"));
    assert_eq!(
        files(cache.path(), "cwasm").len(),
        1,
        "the instrumented form"
    );

    let next = host_with_cache(cache.path());
    let module = next.load_bytes("m", &wasm).expect("loads");
    assert!(module.func_ref_profile().is_none(), "ordered, not profiled");
    assert_eq!(
        files(cache.path(), "cwasm").len(),
        2,
        "the ordered form, too"
    );
    runs_to_exit(&next, module).await;

    // Not a profile: the module is profiled again, and the file made anew.
    std::fs::write(written, "garbage").expect("overwrite");
    let again = host_with_cache(cache.path());
    let module = again.load_bytes("m", &wasm).expect("loads");
    assert!(module.func_ref_profile().is_some(), "profiled again");
    runs_to_exit(&again, module).await;
    let text = std::fs::read_to_string(written).expect("profile");
    assert_eq!(text, format!("{HEADER}\n1\n3\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_cache_nothing_is_profiled() {
    let (settings, _) = test_settings();
    let host = Host::new(idle_upstream(), settings).expect("host");
    let module = host.load_bytes("m", &calling_guest()).expect("loads");
    assert!(module.func_ref_profile().is_none());
    runs_to_exit(&host, module).await;
}
