//! The store-reader example (a reflector filling a Store in one task, another task writing a
//! summary of it), as a wasm module in the host shim and as a native build, each in its own
//! namespace, driven by the same steps: the summary follows creates, label changes, data
//! changes and deletes, and catches up with changes made right after an apiserver restart;
//! both runs end in the same state and exit 0 when stopped.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ApiResource, DeleteParams, Patch, PatchParams, PostParams};
use kube_wasm_e2e::objects::config_map;
use kube_wasm_e2e::state::{assert_same_state, namespace_state};
use kube_wasm_e2e::{
    HostShim, Program, client, eventually, fresh_namespace, kubeconfig_for, restart_apiserver,
    scratch_dir, until_answered,
};
use std::collections::BTreeMap;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const MODULE: &str = "store-reader";
const LABEL: &str = "kube-wasm.dev/store";
const SUMMARY: &str = "store-summary";

/// One run of the example: its namespace and how it is started.
struct Run {
    name: &'static str,
    ns: String,
    cms: Api<ConfigMap>,
}

async fn create(runs: &[Run], cm: &ConfigMap) {
    for run in runs {
        let what = format!("{}: create {:?}", run.name, cm.metadata.name);
        until_answered(WAIT, &what, &[409], || async {
            run.cms.create(&PostParams::default(), cm).await
        })
        .await;
    }
}

async fn patch(runs: &[Run], name: &str, patch: serde_json::Value) {
    for run in runs {
        let what = format!("{}: patch {name}", run.name);
        until_answered(WAIT, &what, &[], || async {
            run.cms
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
        })
        .await;
    }
}

async fn delete(runs: &[Run], name: &str) {
    for run in runs {
        let what = format!("{}: delete {name}", run.name);
        until_answered(WAIT, &what, &[404], || async {
            run.cms.delete(name, &DeleteParams::default()).await
        })
        .await;
    }
}

/// Waits until every run's summary holds exactly these values.
async fn expect_summary(runs: &[Run], count: usize, names: &str, primary: &str, mode: &str) {
    let want: BTreeMap<String, String> = [
        ("count", count.to_string()),
        ("names", names.to_string()),
        ("primary", primary.to_string()),
        ("mode", mode.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for run in runs {
        let what = format!("{}: summary {want:?}", run.name);
        eventually(WAIT, &what, || async {
            let cm = run.cms.get_opt(SUMMARY).await.ok().flatten()?;
            (cm.data.as_ref() == Some(&want)).then_some(())
        })
        .await;
    }
}

fn summary_writes(program: &Program) -> usize {
    program
        .stdout
        .snapshot()
        .iter()
        .filter(|l| l.contains("store-reader: wrote summary"))
        .count()
}

#[tokio::test]
async fn summary_follows_the_store_through_an_apiserver_restart() {
    let client = client().await;
    let mut runs = Vec::new();
    for name in ["wasm", "native"] {
        let ns = fresh_namespace(&client, &format!("store-reader-{name}")).await;
        let cms = Api::namespaced(client.clone(), &ns);
        runs.push(Run { name, ns, cms });
    }
    let label = (LABEL, "true");

    // Before the programs start: the initial listing finds `alpha`, not the unlabelled `other`.
    create(&runs, &config_map("alpha", &[label], &[("k", "1")])).await;
    create(&runs, &config_map("other", &[], &[])).await;

    let mut wasm = HostShim::start(&kubeconfig_for(&runs[0].ns, &scratch_dir()), &[], MODULE);
    let mut native = Program::native(MODULE, &kubeconfig_for(&runs[1].ns, &scratch_dir()));
    for program in [&wasm, &native] {
        program
            .stdout
            .wait_for("store-reader: store ready", WAIT)
            .expect("the store became ready");
    }
    expect_summary(&runs, 1, "alpha", "none", "unset").await;

    // Created while watching; `find` picks the one labelled role=primary.
    create(
        &runs,
        &config_map("beta", &[label, ("role", "primary")], &[]),
    )
    .await;
    expect_summary(&runs, 2, "alpha,beta", "beta", "unset").await;

    // Label changes: `alpha` leaves the selector, `other` joins it.
    patch(
        &runs,
        "alpha",
        serde_json::json!({"metadata": {"labels": {LABEL: null}}}),
    )
    .await;
    patch(
        &runs,
        "other",
        serde_json::json!({"metadata": {"labels": {LABEL: "true"}}}),
    )
    .await;
    expect_summary(&runs, 2, "beta,other", "beta", "unset").await;

    // `settings` is read with `get`; its data changes are followed.
    create(
        &runs,
        &config_map("settings", &[label], &[("mode", "blue")]),
    )
    .await;
    expect_summary(&runs, 3, "beta,other,settings", "beta", "blue").await;
    patch(
        &runs,
        "settings",
        serde_json::json!({"data": {"mode": "green"}}),
    )
    .await;
    expect_summary(&runs, 3, "beta,other,settings", "beta", "green").await;

    delete(&runs, "beta").await;
    expect_summary(&runs, 2, "other,settings", "none", "green").await;

    // Changes made right after the apiserver comes back: the reflector resumes or relists
    // and the summary catches up with all of them.
    restart_apiserver().expect("apiserver restarted");
    create(
        &runs,
        &config_map("gamma", &[label, ("role", "primary")], &[]),
    )
    .await;
    delete(&runs, "other").await;
    patch(
        &runs,
        "settings",
        serde_json::json!({"data": {"mode": "red"}}),
    )
    .await;
    expect_summary(&runs, 2, "gamma,settings", "gamma", "red").await;

    // Nothing changes any more, so nothing more is written (three ticks later).
    let last = r#"wrote summary {"count": "2", "mode": "red", "names": "gamma,settings", "primary": "gamma"}"#;
    for program in [&wasm, &native] {
        program
            .stdout
            .wait_for(last, WAIT)
            .expect("the final summary was logged");
    }
    let writes = [summary_writes(&wasm), summary_writes(&native)];
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        [summary_writes(&wasm), summary_writes(&native)],
        writes,
        "an unchanged summary is not written again"
    );

    let resources = [ApiResource::erase::<ConfigMap>(&())];
    let wasm_state = namespace_state(&client, &runs[0].ns, &resources).await;
    let native_state = namespace_state(&client, &runs[1].ns, &resources).await;
    assert_eq!(
        wasm_state.keys().collect::<Vec<_>>(),
        [
            "ConfigMap/alpha",
            "ConfigMap/gamma",
            "ConfigMap/settings",
            "ConfigMap/store-summary"
        ]
    );
    assert_same_state("wasm", &wasm_state, "native", &native_state);

    // The host shim turns SIGTERM into the module's ctrl_c; the native build's ctrl_c is
    // SIGINT.
    let status = wasm.terminate(WAIT).expect("host shim exits");
    assert!(status.success(), "host shim exit status {status}");
    let status = native.interrupt(WAIT).expect("native build exits");
    assert!(status.success(), "native exit status {status}");
    for program in [&wasm, &native] {
        program
            .stdout
            .wait_for("store-reader: stop requested", Duration::from_secs(1))
            .expect("the program saw the stop request");
    }
}
