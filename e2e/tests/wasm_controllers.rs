//! The host as the operator of WasmController resources, against the real apiserver and the
//! test OCI registry: three WasmControllers reach Running with their status; a new digest for
//! one replaces only that one; a deleted one stops and closes its watch before it goes away;
//! a missing image, a tampered blob, a module of another ABI, a missing ServiceAccount and an
//! invalid spec end in BackOff or Failed with a message and an Event while a neighbour keeps
//! reconciling; after SIGKILL a new host brings
//! every resource back; `kubectl get wasmcontrollers` prints the columns.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use kube_wasm_e2e::audit::audited_requests;
use kube_wasm_e2e::objects::mirrored;
use kube_wasm_e2e::registry;
use kube_wasm_e2e::wasm_controllers as wc;
use kube_wasm_e2e::{Program, client, eventually, fresh_namespace, gone, scratch_dir};
use serde_json::{Value, json};

/// Debug builds compile a module in seconds; several reconcile at once on two cores.
const PROMPTLY: Duration = Duration::from_secs(60);

/// The status of `name` once `check` holds for it.
async fn status_when(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    eventually(PROMPTLY, what, || async {
        let object = api.get(name).await.ok()?;
        let status = object.data.get("status")?.clone();
        check(&status).then_some(status)
    })
    .await
}

fn phase(status: &Value) -> &str {
    status["phase"].as_str().unwrap_or_default()
}

/// Creates a labelled ConfigMap in `ns` and waits for its mirror Secret.
async fn mirrors(client: &kube::Client, ns: &str, name: &str) {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    cms.create(&PostParams::default(), &mirrored(name))
        .await
        .expect("create");
    eventually(PROMPTLY, "the module in {ns} to mirror", || async {
        secrets.get_opt(name).await.ok().flatten()
    })
    .await;
}

async fn has_event(client: &kube::Client, ns: &str, name: &str, reason: &str) -> bool {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    events
        .list(&ListParams::default())
        .await
        .map(|list| {
            list.items.iter().any(|e| {
                e.involved_object.name.as_deref() == Some(name)
                    && e.reason.as_deref() == Some(reason)
            })
        })
        .unwrap_or(false)
}

/// A host running the WasmControllers of `namespaces`, each module with watches of its own.
fn start_host(dir: &std::path::Path, namespaces: &[String]) -> Program {
    let namespaces: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    wc::start_host(
        "e2e-host",
        &dir.join("cache"),
        &namespaces,
        &["--shared-watches", "false"],
    )
}

#[tokio::test]
async fn wasm_controllers_run_upgrade_fail_alone_go_away_and_come_back() {
    let client = client().await;
    wc::install_crd();
    let pid = std::process::id();
    let address = registry::address();
    let repository = format!("e2e/wc-mirror-{pid}");
    registry::push("configmap-mirror", &repository, "v1", &[]);
    // The same module under another manifest digest: an upgrade the host must roll out.
    let upgraded = registry::push(
        "configmap-mirror",
        &repository,
        "v2",
        &[
            "--layer-media-type",
            "application/vnd.wasm.content.layer.v1+wasm",
        ],
    );
    let dir = scratch_dir().join(format!("wasm-controllers-{pid}"));
    std::fs::create_dir_all(&dir).expect("dir");
    let namespaces = [
        fresh_namespace(&client, "wc-a").await,
        fresh_namespace(&client, "wc-b").await,
        fresh_namespace(&client, "wc-c").await,
    ];
    let bad_ns = fresh_namespace(&client, "wc-bad").await;
    let watched: Vec<String> = namespaces.iter().chain([&bad_ns]).cloned().collect();
    let mut host = start_host(&dir, &watched);
    for ns in &namespaces {
        wc::api(&client, ns)
            .create(
                &PostParams::default(),
                &wc::resource("mirror", &format!("{address}/{repository}:v1")),
            )
            .await
            .expect("created");
    }
    for ns in &namespaces {
        let status = status_when(&wc::api(&client, ns), "mirror", "Running", |s| {
            phase(s) == "Running"
        })
        .await;
        assert!(
            status["digest"]
                .as_str()
                .is_some_and(|d| d.starts_with("sha256:")),
            "{status}"
        );
        assert_eq!(status["host"], "e2e-host");
        assert_eq!(status["observedGeneration"], 1);
        assert!(
            status["conditions"].as_array().is_some_and(|c| c
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")),
            "{status}"
        );
        mirrors(&client, ns, "first").await;
        assert!(has_event(&client, ns, "mirror", "Started").await);
    }
    let table = wc::kubectl(&["get", "wasmcontrollers", "-A"]);
    assert!(
        table.lines().next().is_some_and(|h| [
            "NAME", "PHASE", "RESTARTS", "DIGEST", "HOST", "AGE"
        ]
        .iter()
        .all(|c| h.contains(c))),
        "{table}"
    );
    assert!(
        table
            .lines()
            .filter(|l| l.contains("Running") && l.contains("e2e-host"))
            .count()
            >= 3,
        "{table}"
    );

    // An upgrade of a's image replaces a alone: b's and c's watches stay, b keeps mirroring.
    let watches_of = |ns: &str| {
        audited_requests("configmaps", ns)
            .into_iter()
            .filter(|r| r.verb == "watch")
            .count()
    };
    let (b_watches, c_watches) = (watches_of(&namespaces[1]), watches_of(&namespaces[2]));
    let a = wc::api(&client, &namespaces[0]);
    a.patch(
        "mirror",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"image": upgraded}})),
    )
    .await
    .expect("patched");
    mirrors(&client, &namespaces[1], "during-upgrade").await;
    let digest = upgraded
        .split_once('@')
        .map(|(_, d)| d.to_owned())
        .expect("pinned");
    status_when(&a, "mirror", "the new digest running", |s| {
        phase(s) == "Running" && s["digest"] == digest.as_str() && s["observedGeneration"] == 2
    })
    .await;
    mirrors(&client, &namespaces[0], "after-upgrade").await;
    assert_eq!(
        watches_of(&namespaces[1]),
        b_watches,
        "b's upstream watch is untouched"
    );
    assert_eq!(
        watches_of(&namespaces[2]),
        c_watches,
        "c's upstream watch is untouched"
    );

    // Deleting c stops its module and closes its watch before the resource goes away.
    let c = wc::api(&client, &namespaces[2]);
    c.delete("mirror", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually(PROMPTLY, "c to go away", || gone(&c, "mirror")).await;
    let open = audited_requests("configmaps", &namespaces[2])
        .into_iter()
        .filter(|r| r.verb == "watch" && !r.stages.iter().any(|s| s == "ResponseComplete"))
        .count();
    assert_eq!(open, 0, "c's watches were closed before it went away");

    // Bad images fail alone, with a message and an Event, while b keeps mirroring.
    let bad = wc::api(&client, &bad_ns);
    let (copy, content) = registry::unique_copy("store-reader", &format!("wc-{pid}"), &dir);
    registry::push_file(&copy, &format!("e2e/wc-tampered-{pid}"), "v1", &[]);
    registry::tamper_blob_holding(&content);
    let other_abi = dir.join("other-abi.wasm");
    std::fs::write(&other_abi, wat::parse_str(OTHER_ABI).expect("wat")).expect("written");
    registry::push_file(&other_abi, &format!("e2e/wc-abi-{pid}"), "v1", &[]);
    for (name, image) in [
        ("missing", format!("{address}/e2e/wc-missing-{pid}:v1")),
        ("tampered", format!("{address}/e2e/wc-tampered-{pid}:v1")),
        ("other-abi", format!("{address}/e2e/wc-abi-{pid}:v1")),
    ] {
        bad.create(&PostParams::default(), &wc::resource(name, &image))
            .await
            .expect("created");
    }
    let good_image = format!("{address}/{repository}:v1");
    for (name, extra) in [
        ("no-account", json!({"serviceAccountName": "ghost"})),
        ("invalid", json!({"memory": "64Q"})),
    ] {
        let mut object = wc::resource(name, &good_image);
        if let (Some(spec), Some(extra)) = (object.data["spec"].as_object_mut(), extra.as_object())
        {
            spec.extend(extra.clone());
        }
        bad.create(&PostParams::default(), &object)
            .await
            .expect("created");
    }
    for (name, want, words, reason) in [
        ("missing", "BackOff", "pulling", "PullBackOff"),
        ("tampered", "Failed", "digest", "PullFailed"),
        ("other-abi", "Failed", "abi 2.0", "Crashed"),
        (
            "no-account",
            "BackOff",
            "does not exist",
            "ServiceAccountMissing",
        ),
        (
            "invalid",
            "Failed",
            "spec.memory: \"64q\" is not a size",
            "InvalidSpec",
        ),
    ] {
        let status = status_when(&bad, name, want, |s| phase(s) == want).await;
        let message = status["message"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase();
        assert!(message.contains(words), "{name}: {message}");
        eventually(PROMPTLY, "the Event", || async {
            has_event(&client, &bad_ns, name, reason)
                .await
                .then_some(())
        })
        .await;
    }
    mirrors(&client, &namespaces[1], "beside-bad-ones").await;
    // A module that cannot start is tried again after the retry delay (10 s), not on every
    // change of its resource: the host's own status writes do not make it try again at once.
    let status_writes = || {
        audited_requests("wasmcontrollers", &bad_ns)
            .iter()
            .filter(|r| r.verb == "patch" && r.stages.iter().any(|s| s == "ResponseComplete"))
            .count()
    };
    let before = status_writes();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let written = status_writes() - before;
    assert!(
        written <= 8,
        "{written} writes in 5 s to five resources that cannot start"
    );

    // A host killed and started again brings every resource back.
    host.kill(Duration::from_secs(10)).expect("killed");
    let mut host = start_host(&dir, &watched);
    for ns in &namespaces[..2] {
        mirrors(&client, ns, "after-restart").await;
        status_when(&wc::api(&client, ns), "mirror", "Running again", |s| {
            phase(s) == "Running"
        })
        .await;
    }
    let status = host.terminate(Duration::from_secs(30)).expect("host exits");
    eprintln!("host exit: {status:?}");
}

/// A module of ABI 2.0: the host refuses it at start.
const OTHER_ABI: &str = r#"(module
  (memory (export "memory") 1)
  (func (export "kube_wasm_abi_version") (result i32) (i32.const 0x20000))
  (func (export "kube_wasm_alloc") (param i32) (result i32) (i32.const 0))
  (func (export "kube_wasm_complete") (param i64 i32 i32))
  (func (export "_start")))"#;
