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
