//! After a failed `std::thread::spawn` — the panic every thread start gives in a wasm32
//! guest — the hook `#[tokio::test]` / `#[tokio::main]` installs says what to use instead,
//! after the usual panic report. Natively threads start, so the child run of this binary
//! raises that panic itself.

extern crate kube_wasm_tokio as tokio;

use std::process::Command;

#[tokio::test]
#[should_panic(expected = "failed to spawn thread")]
async fn child_fails_to_spawn_a_thread() {
    if std::env::var_os("KUBE_WASM_ADVICE_CHILD").is_none() {
        panic!("failed to spawn thread (skipped: only the parent's child run reports)");
    }
    panic!(
        "failed to spawn thread: Error {{ kind: Unsupported, message: \"operation not supported on this platform\" }}"
    );
}

#[tokio::test]
#[should_panic(expected = "index out of bounds")]
async fn child_panics_otherwise() {
    let v: Vec<u8> = Vec::new();
    let _ = v[std::hint::black_box(1)];
}

fn child_stderr(test: &str) -> String {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env("KUBE_WASM_ADVICE_CHILD", "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_thread_spawn_panic_is_reported_then_explained() {
    let stderr = child_stderr("child_fails_to_spawn_a_thread");
    let report = stderr.find("failed to spawn thread: Error").expect(&stderr);
    let note = stderr
        .find("note: a kube-wasm module has one thread")
        .expect(&stderr);
    assert!(report < note, "{stderr}");
    assert!(stderr.contains("tokio::spawn") && stderr.contains("spawn_blocking"));
}

#[test]
fn other_panics_get_no_advice() {
    let stderr = child_stderr("child_panics_otherwise");
    assert!(stderr.contains("index out of bounds"), "{stderr}");
    assert!(
        !stderr.contains("kube-wasm module has one thread"),
        "{stderr}"
    );
}
