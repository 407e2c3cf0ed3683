//! The multi-watch example (ConfigMaps, Secrets and ServiceAccounts watched as one stream,
//! filtered on label changes, recorded in the ConfigMap `multi-watch-log`), as a wasm module
//! in the host shim and as a native build, each in its own namespace, driven by the same
//! steps: every kind is recorded, data- and annotation-only updates are not, label changes
//! are; after an apiserver restart, new objects of every kind are recorded and the relist
//! records nothing for the objects that were already seen; both runs end in the same state
//! and exit 0 when stopped.

use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::serde::Serialize;
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::{ApiResource, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::NamespaceResourceScope;
use kube::{Api, Client, Resource};
use kube_wasm_e2e::state::{assert_same_state, namespace_state};
use kube_wasm_e2e::{
    HostShim, Program, client, eventually, fresh_namespace, kubeconfig_for, restart_apiserver,
    scratch_dir, until_answered,
};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const MODULE: &str = "multi-watch";
const LABEL: &str = "kube-wasm.dev/watched";
const LOG: &str = "multi-watch-log";
/// The record of an object seen with only the watched label.
const WATCHED: &str = "kube-wasm.dev/watched=true";

/// One run of the example: its namespace.
struct Run {
    name: &'static str,
    ns: String,
    client: Client,
}

impl Run {
    fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), &self.ns)
    }
}

fn meta(name: &str, watched: bool) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        labels: watched.then(|| [(LABEL.to_string(), "true".to_string())].into()),
        ..ObjectMeta::default()
    }
}

fn config_map(name: &str, watched: bool) -> ConfigMap {
    ConfigMap {
        metadata: meta(name, watched),
        data: Some([("k".to_string(), "1".to_string())].into()),
        ..ConfigMap::default()
    }
}

fn secret(name: &str) -> Secret {
    Secret {
        metadata: meta(name, true),
        string_data: Some([("token".to_string(), "s3cret".to_string())].into()),
        ..Secret::default()
    }
}

fn service_account(name: &str) -> ServiceAccount {
    ServiceAccount {
        metadata: meta(name, true),
        ..ServiceAccount::default()
    }
}

async fn create<K>(runs: &[Run], obj: &K)
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + Debug,
{
    for run in runs {
        let api = run.api::<K>();
        let what = format!("{}: create {:?}", run.name, obj.meta().name);
        until_answered(WAIT, &what, &[409], || async {
            api.create(&PostParams::default(), obj).await
        })
        .await;
    }
}

async fn patch<K>(runs: &[Run], name: &str, patch: serde_json::Value)
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Debug,
{
    for run in runs {
        let api = run.api::<K>();
        let what = format!("{}: patch {name}", run.name);
        until_answered(WAIT, &what, &[], || async {
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
        })
        .await;
    }
}

fn count(record: &str) -> u32 {
    record
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Waits until every run's log has recorded each object of `want` at least as often as
/// wanted, then asserts the log is exactly `want` (so a record too many fails).
async fn expect_log(runs: &[Run], want: &[(&str, &str)]) {
    let want: BTreeMap<String, String> = want
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for run in runs {
        let api = run.api::<ConfigMap>();
        let what = format!("{}: log {want:?}", run.name);
        let log = eventually(WAIT, &what, || async {
            let log = api.get_opt(LOG).await.ok().flatten()?.data?;
            want.iter()
                .all(|(k, v)| log.get(k).is_some_and(|r| count(r) >= count(v)))
                .then_some(log)
        })
        .await;
        assert_eq!(log, want, "{}: the log", run.name);
    }
}

#[tokio::test]
async fn records_label_changes_of_every_kind_through_an_apiserver_restart() {
    let client = client().await;
    let mut runs = Vec::new();
    for name in ["wasm", "native"] {
        let ns = fresh_namespace(&client, &format!("multi-watch-{name}")).await;
        runs.push(Run {
            name,
            ns,
            client: client.clone(),
        });
    }
    let gold = format!("2 {WATCHED},tier=gold");
    let once = format!("1 {WATCHED}");

    // Before the programs start: one watched object of each kind, and an unwatched one.
    create(&runs, &config_map("alpha", true)).await;
    create(&runs, &config_map("ignored", false)).await;
    create(&runs, &secret("token")).await;
    create(&runs, &service_account("builder")).await;

    let mut wasm = HostShim::start(&kubeconfig_for(&runs[0].ns, &scratch_dir()), &[], MODULE);
    let mut native = Program::native(MODULE, &kubeconfig_for(&runs[1].ns, &scratch_dir()));
    for program in [&wasm, &native] {
        program
            .stdout
            .wait_for("multi-watch: watching", WAIT)
            .expect("the program started");
    }
    expect_log(
        &runs,
        &[
            ("ConfigMap.alpha", &once),
            ("Secret.token", &once),
            ("ServiceAccount.builder", &once),
        ],
    )
    .await;

    // Updates the label predicate filters out, then label changes on the same objects (each
    // kind's events arrive in order, so when the label change is recorded the earlier update
    // has been filtered: the count is 2, not 3), and a new object.
    patch::<ConfigMap>(&runs, "alpha", serde_json::json!({"data": {"k": "2"}})).await;
    patch::<ServiceAccount>(
        &runs,
        "builder",
        serde_json::json!({"metadata": {"annotations": {"note": "data only"}}}),
    )
    .await;
    patch::<Secret>(
        &runs,
        "token",
        serde_json::json!({"stringData": {"token": "new"}}),
    )
    .await;
    let tier_gold = serde_json::json!({"metadata": {"labels": {"tier": "gold"}}});
    patch::<ConfigMap>(&runs, "alpha", tier_gold.clone()).await;
    patch::<ServiceAccount>(&runs, "builder", tier_gold).await;
    create(&runs, &config_map("beta", true)).await;
    expect_log(
        &runs,
        &[
            ("ConfigMap.alpha", &gold),
            ("ConfigMap.beta", &once),
            ("Secret.token", &once),
            ("ServiceAccount.builder", &gold),
        ],
    )
    .await;

    // Right after the apiserver comes back: new objects of every kind and a label change are
    // recorded; the objects a relist re-emits unchanged are not recorded again.
    restart_apiserver().expect("apiserver restarted");
    create(&runs, &config_map("gamma", true)).await;
    create(&runs, &secret("second")).await;
    create(&runs, &service_account("deployer")).await;
    patch::<Secret>(
        &runs,
        "token",
        serde_json::json!({"metadata": {"labels": {"tier": "silver"}}}),
    )
    .await;
    let silver = format!("2 {WATCHED},tier=silver");
    expect_log(
        &runs,
        &[
            ("ConfigMap.alpha", &gold),
            ("ConfigMap.beta", &once),
            ("ConfigMap.gamma", &once),
            ("Secret.second", &once),
            ("Secret.token", &silver),
            ("ServiceAccount.builder", &gold),
            ("ServiceAccount.deployer", &once),
        ],
    )
    .await;
    for program in [&wasm, &native] {
        assert!(
            !program
                .stdout
                .snapshot()
                .iter()
                .any(|l| l.contains("ignored")),
            "the unlabelled ConfigMap is not watched"
        );
    }

    let resources = [
        ApiResource::erase::<ConfigMap>(&()),
        ApiResource::erase::<Secret>(&()),
        ApiResource::erase::<ServiceAccount>(&()),
    ];
    let wasm_state = namespace_state(&client, &runs[0].ns, &resources).await;
    let native_state = namespace_state(&client, &runs[1].ns, &resources).await;
    assert_eq!(
        wasm_state.keys().collect::<Vec<_>>(),
        [
            "ConfigMap/alpha",
            "ConfigMap/beta",
            "ConfigMap/gamma",
            "ConfigMap/ignored",
            "ConfigMap/multi-watch-log",
            "Secret/second",
            "Secret/token",
            "ServiceAccount/builder",
            "ServiceAccount/deployer",
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
            .wait_for("multi-watch: stop requested", Duration::from_secs(1))
            .expect("the program saw the stop request");
    }
}
