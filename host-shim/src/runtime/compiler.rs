//! Where modules are compiled: in the host's own process, or in a child process so that the
//! serving host never runs Cranelift.
//!
//! Compiling a module touches megabytes of Cranelift's code and fills glibc's heap with the
//! compiler's short-lived data; in a long-running host both stay resident after the last
//! compile (code pages once touched, heap pages kept for reuse). A child process — the host's
//! own binary, `host-shim compile` — takes the wasm on stdin and writes the precompiled
//! artifact (as [`Engine::precompile_module`] makes it) to stdout; the host then stores it in
//! its cache and maps it like any cached entry. All the compiler's memory leaves with the
//! child.
//!
//! The child builds its engine with [`engine::new_engine`] from the same [`PoolSize`], so
//! the artifact matches the host's engine; wasmtime checks that again when the host loads
//! it ([`Engine::precompile_compatibility_hash`]).
//!
//! Wherever it runs, compiling first merges the module's identical functions
//! ([`merge_functions`]); [`PIPELINE`] names that step in the cache's entry names.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use wasmtime::{Engine, Module};

use crate::runtime::engine::{self, PoolSize};
use crate::runtime::fiber_stacks::ReleasableStacks;
use crate::runtime::merge_functions;

/// What the host does to a module's bytes before wasmtime compiles them; part of every
/// cache entry's name, so an artifact made by another pipeline is a miss, never a hit.
pub const PIPELINE: &str = "merge-identical-functions/2";

/// The largest artifact read back from a child, in bytes: far above any module the host's
/// size limits let in (a 2 MiB module compiles to about 5 MiB).
pub const MAX_ARTIFACT_BYTES: usize = 1 << 30;

/// The most of a failed child's stderr kept in the error, in bytes (its end).
const MAX_ERROR_BYTES: usize = 4096;

/// Where Cranelift runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Compiler {
    /// In this process (the library's default: an embedding program has no `compile`
    /// subcommand).
    #[default]
    InProcess,
    /// In a child process: `program compile [--pool-instances N --pool-max-memory-bytes B]`,
    /// the wasm on stdin, the artifact on stdout, an error on stderr with a non-zero exit.
    /// `host-shim run` uses `/proc/self/exe`, which still names the running binary after the
    /// file was replaced by an upgrade.
    Child {
        /// The `host-shim` binary.
        program: PathBuf,
    },
}

impl Compiler {
    /// The child compiler of `host-shim run`: this very binary.
    pub fn this_binary() -> Self {
        let program = if cfg!(target_os = "linux") {
            PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("host-shim"))
        };
        Self::Child { program }
    }

    /// The precompiled artifact of `wasm` for `engine` (made with `pool`), as
    /// [`Engine::precompile_module`] makes it. CPU-bound, and blocks while a child runs:
    /// call from a blocking thread.
    ///
    /// # Errors
    /// If `wasm` does not compile (with the compiler's message), or the child cannot be
    /// started, is killed, or answers with more than [`MAX_ARTIFACT_BYTES`].
    pub fn precompile(
        &self,
        engine: &Engine,
        pool: Option<PoolSize>,
        wasm: &[u8],
    ) -> wasmtime::Result<Vec<u8>> {
        match self {
            Self::InProcess => compile_merged(wasm, |w| engine.precompile_module(w)),
            Self::Child { program } => precompile_in_child(program, pool, wasm),
        }
    }

    /// The compiled module of `wasm`, when there is no cache to map it from: compiled in this
    /// process, or precompiled by the child and deserialised into this process's memory.
    ///
    /// # Errors
    /// As [`precompile`](Self::precompile), or if wasmtime rejects the child's artifact.
    pub fn module(
        &self,
        engine: &Engine,
        pool: Option<PoolSize>,
        wasm: &[u8],
    ) -> wasmtime::Result<Module> {
        match self {
            Self::InProcess => compile_merged(wasm, |w| Module::new(engine, w)),
            Self::Child { .. } => {
                let artifact = self.precompile(engine, pool, wasm)?;
                // SAFETY: the artifact was made just now by this host's own binary from
                // `wasm`, and came straight through a pipe from that child.
                unsafe { Module::deserialize(engine, &artifact) }
            }
        }
    }
}

/// `compile` of `wasm` with its identical functions merged
/// ([`merge_functions::merge_identical_functions`]), or of `wasm` as it is if the merge leaves
/// it or its output does not compile: the merge never makes a module fail, and an error is
/// about the bytes the module's author built.
fn compile_merged<T>(
    wasm: &[u8],
    compile: impl Fn(&[u8]) -> wasmtime::Result<T>,
) -> wasmtime::Result<T> {
    match merge_functions::merge_identical_functions(wasm) {
        Some(merged) => compile(&merged).or_else(|err| {
            tracing::debug!("merged, the module does not compile ({err}); compiling it as it is");
            compile(wasm)
        }),
        None => compile(wasm),
    }
}

/// The arguments that give a child the host's engine configuration.
pub fn engine_args(pool: Option<PoolSize>) -> Vec<String> {
    match pool {
        None => Vec::new(),
        Some(pool) => vec![
            "--pool-instances".into(),
            pool.instances.to_string(),
            "--pool-max-memory-bytes".into(),
            pool.max_memory_bytes.to_string(),
        ],
    }
}

fn precompile_in_child(
    program: &Path,
    pool: Option<PoolSize>,
    wasm: &[u8],
) -> wasmtime::Result<Vec<u8>> {
    let mut child = Command::new(program)
        .arg("compile")
        .args(engine_args(pool))
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            wasmtime::format_err!("starting the compiler {} compile: {e}", program.display())
        })?;
    // The child reads all of its input before it writes anything, so writing first and
    // reading after cannot deadlock; stderr is read on its own thread all the same.
    let stderr = child.stderr.take();
    let errors = std::thread::spawn(move || stderr.map(tail_of).unwrap_or_default());
    let written = child
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(wasm))
        .unwrap_or(Ok(()));
    let mut artifact = Vec::new();
    let read = child.stdout.take().map(|stdout| {
        stdout
            .take(MAX_ARTIFACT_BYTES as u64 + 1)
            .read_to_end(&mut artifact)
    });
    if artifact.len() > MAX_ARTIFACT_BYTES {
        let _ = child.kill();
    }
    let status = child.wait();
    let errors = errors.join().unwrap_or_default();
    let status = status.map_err(|e| wasmtime::format_err!("waiting for the compiler: {e}"))?;
    if artifact.len() > MAX_ARTIFACT_BYTES {
        return Err(wasmtime::format_err!(
            "the compiled module is larger than {MAX_ARTIFACT_BYTES} bytes"
        ));
    }
    if !status.success() {
        return Err(wasmtime::format_err!(
            "{}",
            failure(status, &errors, program)
        ));
    }
    written.map_err(|e| wasmtime::format_err!("sending the module to the compiler: {e}"))?;
    if let Some(Err(e)) = read {
        return Err(wasmtime::format_err!("reading the compiler's output: {e}"));
    }
    Ok(artifact)
}

/// The last [`MAX_ERROR_BYTES`] (and up to as many more) of what `stream` gives until its
/// end: all of it is read, so a child that writes much is never blocked, and little is kept.
fn tail_of(mut stream: impl std::io::Read) -> Vec<u8> {
    let mut tail = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return tail,
            Ok(n) => {
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > 2 * MAX_ERROR_BYTES {
                    tail.drain(..tail.len() - MAX_ERROR_BYTES);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return tail,
        }
    }
}

/// What a failed child said: the end of its stderr, else how it ended.
fn failure(status: ExitStatus, stderr: &[u8], program: &Path) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if !text.is_empty() {
        let start = text.len().saturating_sub(MAX_ERROR_BYTES);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        return text[start..].to_owned();
    }
    format!("the compiler {} compile {status}", program.display())
}

/// `host-shim compile`: reads a wasm module from `input`, compiles it (its identical
/// functions merged first) for an engine made with `pool` ([`engine::new_engine`]) and writes
/// the artifact to `output`.
///
/// # Errors
/// If the input cannot be read, the module does not compile, or the output cannot be written.
pub fn compile_stream(
    pool: Option<PoolSize>,
    input: &mut impl std::io::Read,
    output: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    let mut wasm = Vec::new();
    input
        .read_to_end(&mut wasm)
        .map_err(|e| anyhow::anyhow!("reading the module from stdin: {e}"))?;
    let engine = engine::new_engine(pool, &ReleasableStacks::default())
        .map_err(|e| anyhow::anyhow!("creating the wasm engine: {e:?}"))?;
    let artifact = compile_merged(&wasm, |w| engine.precompile_module(w))
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    output
        .write_all(&artifact)
        .and_then(|()| output.flush())
        .map_err(|e| anyhow::anyhow!("writing the compiled module to stdout: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAT: &str = r#"(module (func (export "f") (result i32) (i32.const 7)))"#;

    #[test]
    fn compile_stream_makes_an_artifact_the_host_engine_loads() {
        let pool = Some(PoolSize {
            instances: 2,
            max_memory_bytes: 1 << 20,
        });
        let wasm = wat::parse_str(WAT).expect("wat");
        let mut artifact = Vec::new();
        compile_stream(pool, &mut &wasm[..], &mut artifact).expect("compiles");
        let engine = engine::new_engine(pool, &ReleasableStacks::default()).expect("engine");
        // SAFETY: made just above by compile_stream.
        let module = unsafe { Module::deserialize(&engine, &artifact) }.expect("loads");
        let mut store = wasmtime::Store::new(&engine, ());
        store.set_epoch_deadline(1_000);
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("instance");
        let f = instance
            .get_typed_func::<(), i32>(&mut store, "f")
            .expect("f");
        assert_eq!(f.call(&mut store, ()).expect("call"), 7);
    }

    #[test]
    fn a_module_that_does_not_compile_fails_with_its_own_error() {
        // Two identical functions (so the merge rewrites the module) and one that does not
        // validate: the error names the offset in the bytes given, not in merged ones.
        let wasm = wat::parse_str(
            r#"(module
                 (func $a (result i32) (i32.add (i32.const 1) (i32.const 2)))
                 (func $b (result i32) (i32.add (i32.const 1) (i32.const 2)))
                 (func $bad (result i32) (i64.const 1))
                 (export "a" (func $a)) (export "b" (func $b)) (export "bad" (func $bad)))"#,
        )
        .expect("wat");
        assert!(merge_functions::merge_identical_functions(&wasm).is_some());
        let engine = Engine::default();
        let direct = engine.precompile_module(&wasm).expect_err("invalid");
        let compiler = Compiler::InProcess;
        let err = compiler
            .precompile(&engine, None, &wasm)
            .expect_err("invalid");
        assert_eq!(format!("{err:?}"), format!("{direct:?}"));
        let err = compiler.module(&engine, None, &wasm).expect_err("invalid");
        assert_eq!(err.to_string(), direct.to_string());
        let mut artifact = Vec::new();
        let err = compile_stream(None, &mut &wasm[..], &mut artifact).expect_err("invalid");
        assert_eq!(format!("{err:#}"), format!("{direct:?}"));
    }

    #[test]
    fn compile_stream_refuses_what_is_not_wasm() {
        let err =
            compile_stream(None, &mut &b"not wasm"[..], &mut Vec::new()).expect_err("not a module");
        assert!(format!("{err:#}").contains("magic"), "{err:#}");
    }

    #[test]
    fn a_child_that_fails_is_a_compile_error_with_its_words() {
        let engine = Engine::default();
        let error_of = |program: &str| {
            let compiler = Compiler::Child {
                program: PathBuf::from(program),
            };
            let err = compiler.precompile(&engine, None, b"\0asm");
            err.expect_err("not a compiler").to_string()
        };
        // `/bin/sh compile` fails: there is no script called `compile`.
        let err = error_of("/bin/sh");
        assert!(err.contains("compile"), "{err}");
        let err = error_of("/nonexistent/host-shim");
        assert!(err.contains("starting the compiler"), "{err}");
    }

    #[test]
    fn only_the_end_of_a_long_error_is_kept() {
        let long: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let tail = tail_of(&long[..]);
        assert!(tail.len() >= MAX_ERROR_BYTES && tail.len() <= 2 * MAX_ERROR_BYTES);
        assert!(long.ends_with(&tail));
        assert_eq!(tail_of(&b"short"[..]), b"short");
    }

    #[test]
    fn engine_args_carry_the_pool() {
        assert!(engine_args(None).is_empty());
        let args = engine_args(Some(PoolSize {
            instances: 3,
            max_memory_bytes: 65536,
        }));
        assert_eq!(
            args,
            ["--pool-instances", "3", "--pool-max-memory-bytes", "65536"]
        );
    }
}
