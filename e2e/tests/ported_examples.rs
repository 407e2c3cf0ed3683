//! Four of kube-rs's own examples (`compat-tests/ported/` and, in a workspace of its own shaped
//! like kube-rs's, `compat-tests/ported-workspace/`: their source unchanged, only
//! Cargo.toml ported as the book's "Porting a Rust controller" says), each run natively
//! against kube 5.0 and as a module in the host shim against the same apiserver: they print
//! the same output, reach the same cluster state and end with the same exit status.

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::ResourceExt as _;
use kube::api::ApiResource;
use kube_wasm_e2e::objects::{config_map, meta};
use kube_wasm_e2e::side_by_side::{Build, Side, SideBySide};
use kube_wasm_e2e::state::{assert_same_state, namespace_state};
use kube_wasm_e2e::{HostShim, client, eventually, fresh_namespace, kubeconfig_for, scratch_dir};
use std::collections::BTreeSet;
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// The examples log through `tracing_subscriber::fmt::init()`, which logs INFO and up — unless
/// tracing-subscriber's `env-filter` feature is on, when it reads `RUST_LOG` (unset: ERROR only).
/// In this workspace the host shim turns that feature on for every native build, so both
/// builds get `RUST_LOG=info` and log alike.
const LOG: &[(&str, &str)] = &[("RUST_LOG", "info")];

/// A log line of `tracing_subscriber::fmt` without its timestamp and colours:
/// `INFO pod_watcher: saw before`.
fn log_message(line: &str) -> String {
    let mut plain = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // An SGR sequence, `ESC [ … m`.
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    let words: Vec<&str> = plain.split_whitespace().collect();
    words.get(1..).unwrap_or_default().join(" ")
}

/// The side's log messages (see [`log_message`]) containing `needle`.
fn messages(side: &Side, needle: &str) -> Vec<String> {
    side.output()
        .iter()
        .map(|line| log_message(line))
        .filter(|message| message.contains(needle))
        .collect()
}

/// Waits until the side logged `message` (exactly, after [`log_message`]) `times` times.
async fn wait_logged(side: &Side, message: &str, times: usize) {
    let what = format!("{}: {message:?} logged {times} times", side.label);
    eventually(WAIT, &what, || async {
        let seen = messages(side, message);
        (seen.iter().filter(|m| *m == message).count() >= times).then_some(())
    })
    .await;
}

/// SIGTERM to the side's program (the host shim's stop request); its exit status.
fn terminate(side: &mut Side) -> ExitStatus {
    let label = side.label.clone();
    side.program
        .as_mut()
        .unwrap_or_else(|| panic!("{label}: not started"))
        .terminate(WAIT)
        .unwrap_or_else(|e| panic!("{label} exits: {e}"))
}

/// The exit statuses of the wasm and the native side (in that order): the native program
/// died of the SIGTERM it never listens for, and the host ended the same way.
fn assert_both_died_of_sigterm(statuses: &[ExitStatus]) {
    let [wasm, native] = statuses else {
        panic!("two statuses: {statuses:?}")
    };
    assert_eq!(native.signal(), Some(15), "native: {native}");
    assert_eq!(wasm.signal(), native.signal(), "wasm: {wasm}");
}

/// A pod no scheduler will place (the test cluster has none): it stays Pending.
fn pending_pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": meta(name, &[]),
        "spec": { "containers": [{ "name": "main", "image": "registry.invalid/none:1" }] },
    }))
    .unwrap_or_else(|e| panic!("pod {name}: {e}"))
}

/// `pod_watcher`: a `watcher` on the namespace's Pods, `applied_objects`, `default_backoff`,
/// logging `saw <name>` through tracing-subscriber. Both builds log the same messages for a
/// pod that existed before they started, one created while they watch and a change to it,
/// and both die of the SIGTERM they never listen for.
#[tokio::test]
async fn pod_watcher_logs_the_same_in_the_host_as_natively() {
    let client = client().await;
    let mut runs = SideBySide::wasm_and_native(&client, "ported-pods").await;
    runs.each(async |side| side.create(&pending_pod("before")).await)
        .await;
    runs.start_with_env("examples/pod_watcher", &[], LOG, "saw before", WAIT);
    runs.each(async |side| side.create(&pending_pod("after")).await)
        .await;
    runs.each(async |side| wait_logged(side, "INFO pod_watcher: saw after", 1).await)
        .await;
    let label = serde_json::json!({ "metadata": { "labels": { "touched": "yes" } } });
    runs.each(async |side| side.merge_patch::<Pod>("after", label.clone()).await)
        .await;
    runs.each(async |side| wait_logged(side, "INFO pod_watcher: saw after", 2).await)
        .await;

    let statuses: Vec<ExitStatus> = runs.sides.iter_mut().map(terminate).collect();
    let [wasm, native] = &runs.sides[..] else {
        panic!("two sides")
    };
    let logged = |side: &Side| messages(side, "pod_watcher");
    assert_eq!(
        logged(wasm),
        logged(native),
        "the log messages, wasm then native"
    );
    assert_eq!(
        logged(native),
        [
            "INFO pod_watcher: saw before",
            "INFO pod_watcher: saw after",
            "INFO pod_watcher: saw after"
        ]
    );
    assert_both_died_of_sigterm(&statuses);
}

const SYNC_LABEL: (&str, &str) = ("configmap-secret-syncer.nullable.se/sync", "true");
const SYNC_FINALIZER: &str = "configmap-secret-syncer.nullable.se/cleanup";

/// Waits until ConfigMap `name` carries the syncer's finalizer and Secret `cmsyncer-<name>`
/// holds `data`.
async fn wait_synced(side: &Side, name: &str, data: &[(&str, &str)]) {
    let what = format!("{}: cmsyncer-{name} holds {data:?}", side.label);
    eventually(WAIT, &what, || async {
        let cm = side.get::<ConfigMap>(name).await?;
        let secret = side.get::<Secret>(&format!("cmsyncer-{name}")).await?;
        let want: BTreeSet<(String, Vec<u8>)> = data
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect();
        let have: BTreeSet<(String, Vec<u8>)> = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        (cm.finalizers().iter().any(|f| f == SYNC_FINALIZER) && have == want).then_some(())
    })
    .await;
}

/// Runs `secret_syncer` (a `Controller` on every namespace's labelled ConfigMaps with kube's
/// `finalizer`) of `build` through one scenario in a fresh namespace, and stops it: returns
/// the side (its namespace's final state can be read) and the exit status.
///
/// The two builds run one after the other: the controller watches all namespaces, so side
/// by side each would also act on the other's ConfigMaps.
async fn run_secret_syncer(client: &kube::Client, build: Build) -> (Side, ExitStatus) {
    let label = build.name().to_string();
    let mut side = Side::new(client, build, label, "ported-syncer").await;
    side.create(&config_map("synced", &[SYNC_LABEL], &[("a", "1")]))
        .await;
    side.create(&config_map("plain", &[], &[("b", "2")])).await;
    side.start_with_env("secret_syncer", &[], LOG);
    wait_synced(&side, "synced", &[("a", "1")]).await;

    side.create(&config_map("later", &[SYNC_LABEL], &[("x", "1")]))
        .await;
    wait_synced(&side, "later", &[("x", "1")]).await;
    let data = serde_json::json!({ "data": { "a": "2", "c": "3" } });
    side.merge_patch::<ConfigMap>("synced", data).await;
    wait_synced(&side, "synced", &[("a", "2"), ("c", "3")]).await;

    // Deleted: the finalizer holds the ConfigMap until the Secret is gone.
    side.delete::<ConfigMap>("later").await;
    let what = format!("{}: later and cmsyncer-later deleted", side.label);
    eventually(WAIT, &what, || async {
        side.gone::<ConfigMap>("later").await?;
        side.gone::<Secret>("cmsyncer-later").await
    })
    .await;
    for (message, name) in [("Reconciling", "synced"), ("Cleaning up", "later")] {
        let quoted = format!("name: Some(\"{name}\")");
        let what = format!("{}: {message} {name} logged", side.label);
        eventually(WAIT, &what, || async {
            messages(&side, message)
                .iter()
                .any(|m| m.contains(&quoted))
                .then_some(())
        })
        .await;
    }
    let status = terminate(&mut side);
    (side, status)
}

/// `secret_syncer`: both builds keep a Secret per labelled ConfigMap, delete it through the
/// finalizer, leave the unlabelled ConfigMap alone, end in the same state, and die of the
/// SIGTERM they never listen for.
#[tokio::test]
async fn secret_syncer_reaches_the_same_state_in_the_host_as_natively() {
    let client = client().await;
    let (native, native_status) = run_secret_syncer(&client, Build::Native).await;
    let (wasm, wasm_status) = run_secret_syncer(&client, Build::Wasm).await;

    let resources = [
        ApiResource::erase::<ConfigMap>(&()),
        ApiResource::erase::<Secret>(&()),
    ];
    let native_state = namespace_state(&client, &native.namespace, &resources).await;
    let wasm_state = namespace_state(&client, &wasm.namespace, &resources).await;
    assert_eq!(
        native_state.keys().collect::<Vec<_>>(),
        [
            "ConfigMap/plain",
            "ConfigMap/synced",
            "Secret/cmsyncer-synced"
        ],
        "native: the final state"
    );
    assert_same_state("native", &native_state, "wasm", &wasm_state);
    assert_eq!(native_status.signal(), Some(15), "native: {native_status}");
    assert_eq!(
        wasm_status.signal(),
        native_status.signal(),
        "wasm: {wasm_status}"
    );
}

/// `crd_derive`: a plain `fn main` printing a derived CRD and objects. The module prints the
/// same lines as the native program and both exit 0.
#[tokio::test]
async fn crd_derive_prints_the_same_in_the_host_as_natively() {
    let native = kube_wasm_e2e::run_native_to_end("examples/crd_derive", &[]);
    let client = client().await;
    let namespace = fresh_namespace(&client, "ported-crd").await;
    let kubeconfig = kubeconfig_for(&namespace, &scratch_dir());
    let mut host = HostShim::start(&kubeconfig, &[], "examples/crd_derive");
    let status = host.wait(WAIT).expect("the host exits");
    let printed = host.module_output("crd_derive");
    assert!(status.success(), "host-shim: {status}: {printed:#?}");
    assert_eq!(printed, native);
    assert_eq!(native.first().map(String::as_str), Some("Kind Foo"));
    assert!(
        native
            .iter()
            .any(|l| l.contains("\"name\": \"fooz.clux.dev\"")),
        "{native:#?}"
    );
}

/// A side's messages of `errorbounded_configmap_watcher` with its namespace written `NS`.
fn watcher_messages(side: &Side) -> Vec<String> {
    messages(side, "errorbounded_configmap_watcher")
        .iter()
        .map(|m| m.replace(&side.namespace, "NS"))
        .collect()
}

/// `errorbounded_configmap_watcher`, from a workspace of its own shaped like kube-rs's
/// (`compat-tests/ported-workspace`: its resolver 1 ported to 2, kube and tokio inherited from
/// `[workspace.dependencies]` natively): a watcher of ConfigMaps read into a type that needs a
/// `ca.crt`, logging each one it saw and then either its contents or why it could not read it.
/// Both builds log the same, namespaces aside, and both die of the SIGTERM they never listen
/// for.
#[tokio::test]
async fn a_watcher_from_a_workspace_of_its_own_logs_the_same_in_the_host_as_natively() {
    let client = client().await;
    let mut runs = SideBySide::wasm_and_native(&client, "ported-ws").await;
    runs.each(async |side| {
        side.create(&config_map("with-ca", &[], &[("ca.crt", "PEM")]))
            .await;
        side.create(&config_map("without-ca", &[], &[("other", "x")]))
            .await;
    })
    .await;
    runs.start_with_env(
        "examples/errorbounded_configmap_watcher",
        &[],
        LOG,
        "without-ca",
        WAIT,
    );
    runs.each(async |side| {
        side.create(&config_map("later", &[], &[("ca.crt", "PEM2")]))
            .await;
    })
    .await;
    runs.each(async |side| {
        let saw = format!(
            "INFO errorbounded_configmap_watcher: saw ConfigMap.v1./later.{}",
            side.namespace
        );
        wait_logged(side, &saw, 1).await;
        let what = format!("{}: the contents of `later` logged", side.label);
        eventually(WAIT, &what, || async {
            let contents = watcher_messages(side)
                .iter()
                .filter(|m| m.contains("contents:") && m.contains("PEM2"))
                .count();
            (contents == 1).then_some(())
        })
        .await;
    })
    .await;

    let statuses: Vec<ExitStatus> = runs.sides.iter_mut().map(terminate).collect();
    let [wasm, native] = &runs.sides[..] else {
        panic!("two sides")
    };
    // The contents carry each side's uid and timestamps: compared up to the struct's name.
    let shape = |side: &Side| -> Vec<String> {
        watcher_messages(side)
            .into_iter()
            .map(|m| match m.split_once("contents: ") {
                Some((head, body)) => {
                    format!("{head}contents: {}", body.split(' ').next().unwrap_or(""))
                }
                None => m,
            })
            .collect()
    };
    assert_eq!(
        shape(wasm),
        shape(native),
        "the log messages, wasm then native"
    );
    let native_log = shape(native);
    let prefix = "errorbounded_configmap_watcher:";
    assert_eq!(
        native_log,
        [
            format!("INFO {prefix} saw ConfigMap.v1./with-ca.NS"),
            format!("INFO {prefix} contents: CaConfigMap"),
            format!("INFO {prefix} saw ConfigMap.v1./without-ca.NS"),
            native_log
                .get(3)
                .filter(|m| m.starts_with(&format!("WARN {prefix} failed to parse: ")))
                .cloned()
                .unwrap_or_else(|| "a parse failure".into()),
            format!("INFO {prefix} saw ConfigMap.v1./later.NS"),
            format!("INFO {prefix} contents: CaConfigMap"),
        ]
    );
    assert_both_died_of_sigterm(&statuses);
}
