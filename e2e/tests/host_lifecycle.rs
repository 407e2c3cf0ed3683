//! How the host ends modules, against the real apiserver.

use kube_wasm_e2e::audit::audited_requests;
use kube_wasm_e2e::{HostShim, client, eventually, fresh_namespace, kubeconfig_for, scratch_dir};
use std::time::Duration;

#[tokio::test]
async fn a_module_that_ignores_stop_is_ended_and_its_watch_closed() {
    let client = client().await;
    let ns = fresh_namespace(&client, "forever").await;
    let kubeconfig = kubeconfig_for(&ns, &scratch_dir());
    let mut host = HostShim::start(
        &kubeconfig,
        &[
            "--stop-timeout",
            "1",
            "--env",
            "API_CHECKS_MODE=watch-forever",
        ],
        "api-checks",
    );
    host.stdout
        .wait_for("watch-forever: watching", Duration::from_secs(30))
        .expect("module is watching");
    let open_watches = || {
        audited_requests("configmaps", &ns)
            .into_iter()
            .filter(|r| r.verb == "watch" && !r.stages.iter().any(|s| s == "ResponseComplete"))
            .count()
    };
    eventually(Duration::from_secs(10), "the watch to be open", || async {
        (open_watches() == 1).then_some(())
    })
    .await;

    let status = host.terminate(Duration::from_secs(15)).expect("host exits");
    assert!(
        !status.success(),
        "a module ended by the host is not a clean exit: {status}"
    );
    eventually(
        Duration::from_secs(10),
        "the watch to be closed",
        || async { (open_watches() == 0).then_some(()) },
    )
    .await;
}

/// A plain `fn main()` that prints and returns, with nothing pending: natively the process
/// exits 0 at once, and so does the host running it as a module, with the same output.
#[tokio::test]
async fn a_module_whose_main_returns_with_nothing_pending_exits_0_promptly() {
    let native = kube_wasm_e2e::run_native_to_end("print-object", &[]);
    let client = client().await;
    let ns = fresh_namespace(&client, "returns").await;
    let kubeconfig = kubeconfig_for(&ns, &scratch_dir());
    let started = std::time::Instant::now();
    let mut host = HostShim::start(&kubeconfig, &[], "print-object");
    let status = host.wait(Duration::from_secs(20)).expect("host exits");
    let took = started.elapsed();
    let lines = host.module_output("print-object");
    assert!(
        status.success(),
        "host-shim ended with {status}: {lines:#?}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(lines, native);
    assert_eq!(
        native,
        [
            "ConfigMap /api/v1/namespaces/ns/configmaps",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"printed"}}"#
        ]
    );
}

/// SIGINT to a program that never listens for it (`watch-forever` has no `ctrl_c`): natively
/// the signal's default action kills the process; the host running that module alone ends
/// the module and then dies by SIGINT too, so a supervisor sees the same (a shell: 130).
#[tokio::test]
async fn sigint_ends_a_lone_module_that_ignores_it_as_it_ends_the_native_program() {
    use std::os::unix::process::ExitStatusExt as _;
    let client = client().await;
    let ns = fresh_namespace(&client, "sigint").await;
    let kubeconfig = kubeconfig_for(&ns, &scratch_dir());

    let mut command = std::process::Command::new(
        std::path::Path::new(&std::env::var("KUBE_WASM_NATIVE_BIN").expect("KUBE_WASM_NATIVE_BIN"))
            .join("api-checks"),
    );
    command
        .env("KUBECONFIG", &kubeconfig)
        .env("API_CHECKS_MODE", "watch-forever");
    let mut native = kube_wasm_e2e::Program::spawn(command, "api-checks");
    native
        .stdout
        .wait_for("watch-forever: watching", Duration::from_secs(30))
        .expect("native program is watching");
    let native_status = native
        .interrupt(Duration::from_secs(15))
        .expect("native exits");

    let mut host = HostShim::start(
        &kubeconfig,
        &["--env", "API_CHECKS_MODE=watch-forever"],
        "api-checks",
    );
    host.stdout
        .wait_for("watch-forever: watching", Duration::from_secs(30))
        .expect("module is watching");
    let host_status = host.interrupt(Duration::from_secs(15)).expect("host exits");

    assert_eq!(native_status.signal(), Some(2), "native: {native_status}");
    assert_eq!(host_status.signal(), Some(2), "host: {host_status}");
    assert_eq!(host_status.code(), native_status.code());
}
