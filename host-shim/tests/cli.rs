//! The `host-shim` binary end to end: help, configuration errors, and a module run against a
//! kubeconfig whose API server is unreachable (no network needed).

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::{Guest, call_with_frame};
use kube_wasm_abi::encode_frame;

fn host_shim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_host-shim"))
        .args(args)
        .env_remove("KUBECONFIG")
        .env("RUST_LOG", "info")
        .output()
        .expect("host-shim runs")
}

/// A fresh scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("host-shim-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn help_describes_the_run_command() {
    let out = host_shim(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("run"), "{text}");

    let out = host_shim(&["run", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for option in [
        "--kubeconfig",
        "--context",
        "--stop-timeout",
        "--env",
        "MODULE.wasm",
    ] {
        assert!(text.contains(option), "{option} in {text}");
    }
}

#[test]
fn a_missing_module_argument_or_kubeconfig_is_an_error() {
    let out = host_shim(&["run"]);
    assert!(!out.status.success());
    let out = host_shim(&["run", "--kubeconfig", "/nonexistent/kubeconfig", "x.wasm"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
}

/// `host-shim run` with an unreachable kubeconfig (it ends at once) and `env` added, logging
/// at debug level: its stderr.
fn run_logging_debug(env: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_host-shim"))
        .args(["run", "--kubeconfig", "/nonexistent/kubeconfig", "x.wasm"])
        .env_remove("GLIBC_TUNABLES")
        .env_remove("MALLOC_ARENA_MAX")
        .env("RUST_LOG", "host_shim=debug")
        .envs(env.iter().copied())
        .output()
        .expect("host-shim runs");
    assert_eq!(out.status.code(), Some(1));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_serving_host_starts_again_with_malloc_tuned_unless_the_environment_tunes_it() {
    let tuned = "malloc tuned for serving: glibc.malloc.arena_max=1";
    let stderr = run_logging_debug(&[]);
    assert!(stderr.contains(tuned), "{stderr}");
    assert!(stderr.contains("tcache_count=0"), "{stderr}");
    let stderr = run_logging_debug(&[("GLIBC_TUNABLES", "glibc.rtld.nns=4")]);
    assert!(
        stderr.contains(tuned),
        "other tunables kept beside: {stderr}"
    );

    for env in [
        ("GLIBC_TUNABLES", "glibc.malloc.arena_max=2"),
        ("MALLOC_ARENA_MAX", "2"),
    ] {
        let stderr = run_logging_debug(&[env]);
        assert!(!stderr.contains("malloc tuned"), "{env:?}: {stderr}");
        assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
    }
}

#[test]
fn runs_modules_with_environment_and_exit_statuses() {
    let dir = scratch("run");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        r#"apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: test
  context:
    cluster: nowhere
    user: someone
    namespace: ring-ns
current-context: test
users:
- name: someone
  user:
    token: secret-token
"#,
    )
    .expect("kubeconfig");

    let frame = encode_frame(&common::get("/api/v1/namespaces"), b"");
    let asker = Guest::new(&format!(
        "(call $print_env) (drop {})",
        call_with_frame("http_request", &frame)
    ))
    .frame(&frame)
    .wasm();
    let asker_path = dir.join("asker.wasm");
    std::fs::write(&asker_path, asker).expect("module");
    // Two modules with the same stem get distinct names.
    let other_dir = dir.join("other");
    std::fs::create_dir_all(&other_dir).expect("dir");
    let failing_path = other_dir.join("asker.wasm");
    std::fs::write(&failing_path, Guest::new("unreachable").wasm()).expect("module");

    let out = host_shim(&[
        "run",
        "--kubeconfig",
        kubeconfig.to_str().expect("utf-8"),
        "--env",
        "EXTRA=1",
        asker_path.to_str().expect("utf-8"),
        failing_path.to_str().expect("utf-8"),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "one module trapped\n{stdout}\n{stderr}"
    );
    let env_line = stdout
        .lines()
        .find(|l| l.starts_with("[asker] KUBE_WASM_MODULE=asker"))
        .unwrap_or_else(|| panic!("environment printed:\n{stdout}\n{stderr}"));
    for expected in [
        "KUBE_WASM_DEFAULT_NAMESPACE=ring-ns",
        "KUBE_WASM_CLUSTER_URL=https://127.0.0.1:1",
        "EXTRA=1",
    ] {
        assert!(env_line.contains(expected), "{expected} in {env_line:?}");
    }
    assert!(
        !env_line.contains("PATH="),
        "nothing is inherited: {env_line:?}"
    );
    assert!(!stdout.contains("secret-token") && !stderr.contains("secret-token"));
    assert!(
        stdout.contains(r#"[asker] 1:{"kind":"error","code":"connect""#),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("module `asker-2` trapped in `_start`"),
        "{stderr}"
    );
    assert!(stderr.contains("module `asker` exited cleanly"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The host binary is position-independent, so its own addresses are randomised like its
/// libraries' (the book's Security model, "The host's own hardening").
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_host_binary_is_position_independent() {
    const ET_DYN: u16 = 3;
    let binary = std::fs::read(env!("CARGO_BIN_EXE_host-shim")).expect("the host binary");
    assert_eq!(&binary[..4], b"\x7fELF");
    let e_type = u16::from_le_bytes([binary[16], binary[17]]);
    assert_eq!(e_type, ET_DYN, "ELF type of the host binary");
}
