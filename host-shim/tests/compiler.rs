//! Compiling in a child process (`Settings::compiler`, `host-shim compile`): the host's own
//! binary compiles a module on a cache miss, the host maps the stored artifact and runs it; a
//! module the child cannot compile is a compile error carrying the child's words.

mod common;

use std::path::{Path, PathBuf};

use common::{Guest, cache_dir, files_with_extension, idle_upstream, runs_to_exit, test_settings};
use host_shim::runtime::compiler::Compiler;
use host_shim::runtime::module::ModuleError;
use host_shim::{Host, Settings};

fn child() -> Compiler {
    Compiler::Child {
        program: PathBuf::from(env!("CARGO_BIN_EXE_host-shim")),
    }
}

/// A compiler that cannot start.
fn missing() -> Compiler {
    Compiler::Child {
        program: PathBuf::from("/nonexistent/host-shim"),
    }
}

/// A host with the test settings, caching into `cache` (none: no cache), compiling with
/// `compiler`.
fn host(cache: Option<&Path>, compiler: Compiler) -> Host {
    let (settings, _) = test_settings();
    let settings = Settings {
        cache_dir: cache.map(Path::to_owned),
        compiler,
        ..settings
    };
    Host::new(idle_upstream(), settings).expect("host")
}

/// Why `host` cannot load `wasm`, which must be a compile error.
fn compile_error(host: &Host, wasm: &[u8]) -> String {
    match host.load_bytes("m", wasm) {
        Err(ModuleError::Compile(reason)) => reason,
        Err(other) => panic!("not a compile error: {other}"),
        Ok(_) => panic!("the module loaded"),
    }
}

fn delaying_guest() -> Vec<u8> {
    Guest::new("(drop (call $delay (i64.const 10)))").wasm()
}

fn entries(dir: &Path) -> usize {
    files_with_extension(dir, "cwasm").len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_child_compiles_into_the_cache_and_the_host_runs_it() {
    let cache = cache_dir();
    let compiling = host(Some(cache.path()), child());
    let wasm = delaying_guest();
    let module = compiling
        .load_bytes("a", &wasm)
        .expect("the child compiles it");
    assert_eq!(entries(cache.path()), 1, "the artifact is stored");
    runs_to_exit(&compiling, module).await;

    // A second host finds the entry: a compiler that cannot run is not needed.
    let cached = host(Some(cache.path()), missing());
    let module = cached.load_bytes("a", &wasm).expect("a cache hit");
    runs_to_exit(&cached, module).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_cache_the_childs_artifact_is_loaded_from_memory() {
    let host = host(None, child());
    let module = host
        .load_bytes("a", &delaying_guest())
        .expect("the child compiles it");
    runs_to_exit(&host, module).await;
}

#[tokio::test]
async fn what_the_child_cannot_compile_is_a_compile_error_in_its_words() {
    let cache = cache_dir();
    let host = host(Some(cache.path()), child());
    // Valid wasm that does not validate: `i32.add` with nothing on the stack.
    let invalid = wat::parse_str("(module (func (drop (i32.add))))").expect("wat");
    let reason = compile_error(&host, &invalid);
    assert!(reason.contains("type mismatch"), "{reason}");
    assert_eq!(entries(cache.path()), 0, "nothing is stored");
}

#[tokio::test]
async fn a_host_whose_compiler_cannot_start_says_so() {
    // Compiled in this process, the module would load: the error shows it went to a child.
    let reason = compile_error(&host(None, missing()), &delaying_guest());
    assert!(reason.contains("starting the compiler"), "{reason}");
}
