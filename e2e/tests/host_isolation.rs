//! Isolation against the real apiserver: modules that loop forever, allocate past their
//! memory limit, panic or send garbage to the ABI are ended and restarted with backoff, their
//! watches are closed each time, and a configmap-mirror beside them keeps mirroring promptly.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use kube_wasm_e2e::audit::audited_requests;
use kube_wasm_e2e::manifest::{Entry, start_manifest, write_manifest};
use kube_wasm_e2e::objects::mirrored;
use kube_wasm_e2e::{client, eventually, fresh_namespace, kubeconfig_for, scratch_dir};
use std::time::Duration;

const MODES: [&str; 4] = ["loop", "oom", "panic", "garbage"];
/// How soon the healthy module must mirror a new ConfigMap while the others misbehave.
const PROMPTLY: Duration = Duration::from_secs(10);

#[tokio::test]
async fn hostile_modules_are_restarted_and_a_healthy_one_keeps_mirroring() {
    let client = client().await;
    let mirror_ns = fresh_namespace(&client, "calm").await;
    let mut hostile_ns = Vec::new();
    for mode in MODES {
        hostile_ns.push(fresh_namespace(&client, &format!("hostile-{mode}")).await);
    }
    let dir = scratch_dir().join(format!("isolation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut entries = vec![Entry::new("mirror", "configmap-mirror").namespace(&mirror_ns)];
    for (mode, ns) in MODES.iter().zip(&hostile_ns) {
        entries.push(
            Entry::new(&format!("hostile-{mode}"), "hostile")
                .namespace(ns)
                .env("HOSTILE_MODE", mode)
                .memory("32Mi"),
        );
    }
    let manifest = write_manifest(
        &dir,
        "host.yaml",
        // Not shared: each run's own upstream watch is what shows it was released.
        "entryDeadline: 1s\nsharedWatches: false\nbackoff: {initial: 500ms, max: 2s, resetAfter: 1m}",
        &entries,
    );
    let kubeconfig = kubeconfig_for(&mirror_ns, &dir);
    let mut host = start_manifest(&kubeconfig, &manifest);
    host.stdout
        .wait_for(
            "[mirror] configmap-mirror: watching",
            Duration::from_secs(60),
        )
        .expect("the mirror starts");

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &mirror_ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &mirror_ns);
    let restarts_of = |mode: &str| {
        let needle = format!("restarting module `hostile-{mode}`");
        host.stderr
            .snapshot()
            .iter()
            .filter(|l| l.contains(&needle))
            .count()
    };
    // While the hostile modules fail and restart, the mirror keeps mirroring promptly.
    let mut round = 0;
    while MODES.iter().any(|mode| restarts_of(mode) < 3) {
        round += 1;
        assert!(round <= 12, "restarts so far: {:?}", MODES.map(restarts_of));
        let name = format!("cm-{round}");
        cms.create(&PostParams::default(), &mirrored(&name))
            .await
            .expect("create");
        eventually(PROMPTLY, "the mirror to mirror a new ConfigMap", || async {
            secrets.get_opt(&name).await.ok().flatten()
        })
        .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    let log = host.stderr.snapshot().join("\n");
    for (mode, reason) in [
        ("loop", "in one call of"),
        ("oom", "over its limit of 33554432 bytes"),
        ("panic", "trapped in"),
        ("garbage", "bad ABI call to `http_request`"),
    ] {
        assert!(
            log.contains(&format!("module `hostile-{mode}` "))
                && log
                    .lines()
                    .any(|l| l.contains(&format!("`hostile-{mode}`")) && l.contains(reason)),
            "hostile-{mode} should fail with {reason:?}:\n{log}"
        );
    }
    assert!(!log.contains("restarting module `mirror`"), "{log}");
    assert!(
        log.lines()
            .any(|l| l.starts_with("[hostile-panic] ") && l.contains("panicked at")),
        "the panic message reaches the module's stderr"
    );

    // Every run of a hostile module opened a watch; all but the current run's are closed.
    for (mode, ns) in MODES.iter().zip(&hostile_ns) {
        eventually(
            Duration::from_secs(10),
            "old watches to be closed",
            || async {
                let watches: Vec<_> = audited_requests("configmaps", ns)
                    .into_iter()
                    .filter(|r| r.verb == "watch")
                    .collect();
                let open = watches
                    .iter()
                    .filter(|r| !r.stages.iter().any(|s| s == "ResponseComplete"))
                    .count();
                (watches.len() >= 3 && open <= 1).then_some(())
            },
        )
        .await;
        eprintln!(
            "hostile-{mode}: {} restarts, its watches closed",
            restarts_of(mode)
        );
    }

    let status = host.terminate(Duration::from_secs(30)).expect("host exits");
    assert!(!status.success(), "failed modules make the exit status 1");
}
