//! Go guests (ABI 1.4 reactor modules built with the standard Go toolchain, kube-wasm-go):
//! the client-go informer + workqueue controller `examples/go-configmap-mirror`, and the
//! controller-runtime Reconciler `examples/go-controller-runtime`, each run natively and in
//! the host side by side, reaching the same cluster state, as does `go-sample-controller`
//! (sample-controller's shape on the oldest client-go the SDK supports: a leader election on
//! a Lease, an event recorder, server-side apply); the same module pulled from
//! the test registry by a WasmController, suspended to disk while idle and resumed by the next
//! event (the host's metrics); and hostile Go guests (a goroutine that never yields, a
//! deadlock, a blocked syscall, `signal.NotifyContext` unported) ended and restarted alone
//! while the Go mirror beside them keeps mirroring.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube_wasm_e2e::manifest::{Entry, start_manifest_with, write_manifest};
use kube_wasm_e2e::metrics::{free_local_addr, scrape};
use kube_wasm_e2e::objects::{config_map, mirrored};
use kube_wasm_e2e::side_by_side::{Build, Side, SideBySide, Stop};
use kube_wasm_e2e::wasm_controllers as wc;
use kube_wasm_e2e::{
    Program, client, eventually, fresh_namespace, kubeconfig_for, registry, scratch_dir,
};
use serde_json::{Value, json};

/// A Go module is tens of MB of wasm: its first compile (the debug host's merge and
/// instrumentation, Cranelift, two busy cores) takes minutes (164 s measured on a loaded
/// machine); every host of this file shares one cache folder, so each module is compiled once
/// (and once more in the order its func-ref profile gives).
const START: Duration = Duration::from_secs(600);
const WAIT: Duration = Duration::from_secs(60);
const MODULE: &str = "go-configmap-mirror";
const LABEL: (&str, &str) = ("kube-wasm.dev/mirror", "true");

/// `metric{module="name"}`, 0 if absent.
fn value(text: &str, metric: &str, module: &str) -> f64 {
    let prefix = format!("{metric}{{module=\"{module}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0.0, |v| v.trim().parse().unwrap_or(0.0))
}

fn is_suspended(text: &str, module: &str) -> bool {
    text.lines().any(|l| {
        l == format!("kube_wasm_module_state{{module=\"{module}\",state=\"suspended\"}} 1")
    })
}

async fn mirror_holds(secrets: &Api<Secret>, name: &str, key: &str, want: &str) {
    let what = format!("Secret {name} holding {key}={want}");
    eventually(WAIT, &what, || async {
        let secret = secrets.get_opt(name).await.ok()??;
        let data = secret.data?;
        (data.get(key).map(|v| v.0.as_slice()) == Some(want.as_bytes())).then_some(())
    })
    .await;
}

/// The cache folder every host of this file shares.
/// The first host creates it, with the mode 0700 a cache folder must have.
fn shared_cache() -> String {
    let dir = scratch_dir().join("go-module-cache");
    dir.to_string_lossy().into_owned()
}

/// `program` natively and in the host (sharing [`shared_cache`]), each side started on a
/// ConfigMap `before` labelled `label` (`greeting: hello`) and one `plain` without it, once
/// each printed "watching ConfigMaps".
async fn started_on_two_config_maps(
    client: &kube::Client,
    prefix: &str,
    label: (&str, &str),
    program: &str,
) -> SideBySide {
    let mut runs = SideBySide::wasm_and_native(client, prefix).await;
    runs.each(async |side| {
        side.create(&config_map("before", &[label], &[("greeting", "hello")]))
            .await;
        side.create(&config_map("plain", &[], &[("ignored", "yes")]))
            .await;
    })
    .await;
    let cache = shared_cache();
    runs.start(
        program,
        &["--cache-dir", &cache],
        "watching ConfigMaps",
        START,
    );
    runs
}

#[tokio::test]
async fn go_configmap_mirror_wasm_and_native_reach_the_same_state() {
    let client = client().await;
    let mut runs = started_on_two_config_maps(&client, "go-mirror", LABEL, MODULE).await;
    runs.each(async |side| mirror_holds(&side.api(), "before", "greeting", "hello").await)
        .await;

    // Created, updated and deleted while watching.
    runs.each(async |side| {
        side.create(&config_map("during", &[LABEL], &[("a", "1")]))
            .await
    })
    .await;
    runs.each(async |side| mirror_holds(&side.api(), "during", "a", "1").await)
        .await;
    let patch = json!({ "data": { "a": "2", "b": "3" } });
    runs.each(async |side| side.merge_patch::<ConfigMap>("during", patch.clone()).await)
        .await;
    runs.each(async |side| mirror_holds(&side.api(), "during", "b", "3").await)
        .await;
    runs.each(async |side| side.delete::<ConfigMap>("before").await)
        .await;
    runs.each(async |side| {
        let what = format!("{}: Secret before deleted", side.label);
        eventually(WAIT, &what, || async {
            side.gone::<Secret>("before").await
        })
        .await;
    })
    .await;

    runs.assert_same_state(
        &[
            ApiResource::erase::<ConfigMap>(&()),
            ApiResource::erase::<Secret>(&()),
        ],
        &["ConfigMap/during", "ConfigMap/plain", "Secret/during"],
    )
    .await;
    // SIGTERM to the native process, the host's stop request to the module: both leave
    // through kubewasm.NotifyContext's context, with signal.NotifyContext's cause.
    runs.stop(
        Stop::Term,
        "stop requested (terminated signal received), exiting",
        WAIT,
    );
}

#[tokio::test]
async fn go_controller_runtime_wasm_and_native_reach_the_same_state() {
    let client = client().await;
    let mut runs = SideBySide::wasm_and_native(&client, "go-ctrl-rt").await;
    runs.each(async |side| {
        side.create(&config_map("before", &[LABEL], &[("greeting", "hello")]))
            .await;
    })
    .await;
    let cache = shared_cache();
    runs.start(
        "go-controller-runtime",
        &["--cache-dir", &cache],
        "watching ConfigMaps",
        START,
    );
    runs.each(async |side| mirror_holds(&side.api(), "before", "greeting", "hello").await)
        .await;
    runs.each(async |side| {
        side.create(&config_map("during", &[LABEL], &[("a", "1")]))
            .await
    })
    .await;
    runs.each(async |side| mirror_holds(&side.api(), "during", "a", "1").await)
        .await;
    runs.each(async |side| side.delete::<ConfigMap>("before").await)
        .await;
    runs.each(async |side| {
        let what = format!("{}: Secret before deleted", side.label);
        eventually(WAIT, &what, || async {
            side.gone::<Secret>("before").await
        })
        .await;
    })
    .await;
    runs.assert_same_state(
        &[
            ApiResource::erase::<ConfigMap>(&()),
            ApiResource::erase::<Secret>(&()),
        ],
        &["ConfigMap/during", "Secret/during"],
    )
    .await;
    runs.stop(Stop::Term, "stop requested, exiting", WAIT);
}

const SAMPLE: &str = "go-sample-controller";
const COPY_LABEL: (&str, &str) = ("kube-wasm.dev/copy", "true");

async fn copy_holds(side: &Side, source: &str, key: &str, want: &str) {
    let copies: Api<ConfigMap> = side.api();
    let what = format!(
        "{}: ConfigMap {source}-copy holding {key}={want}",
        side.label
    );
    eventually(WAIT, &what, || async {
        let copy = copies.get_opt(&format!("{source}-copy")).await.ok()??;
        (copy.data?.get(key).map(String::as_str) == Some(want)).then_some(())
    })
    .await;
}

/// Waits until ConfigMap `source` is marked with the hash its copy was applied with, and the
/// copy holds the source's data: the controller's last step for a change.
async fn copy_settled(side: &Side, source: &str) {
    let config_maps: Api<ConfigMap> = side.api();
    let what = format!(
        "{}: ConfigMap {source} marked with its copy's hash",
        side.label
    );
    eventually(WAIT, &what, || async {
        let original = config_maps.get_opt(source).await.ok()??;
        let copy = config_maps
            .get_opt(&format!("{source}-copy"))
            .await
            .ok()??;
        let marked = original
            .metadata
            .annotations?
            .get("kube-wasm.dev/copied-hash")?
            .clone();
        let applied = copy
            .metadata
            .annotations?
            .get("kube-wasm.dev/hash")?
            .clone();
        (marked == applied && original.data == copy.data).then_some(())
    })
    .await;
}

/// The holder of the sample controller's Lease in the side's namespace ("" once released).
async fn lease_holder(side: &Side) -> Option<String> {
    let leases: Api<Lease> = side.api();
    let lease = leases.get_opt(SAMPLE).await.ok()??;
    Some(lease.spec?.holder_identity.unwrap_or_default())
}

/// The sample controller's `Copied` Event on ConfigMap `source`, as its recorder posts it.
async fn copied_event(side: &Side, source: &str) {
    let events: Api<Event> = side.api();
    let what = format!("{}: a Copied Event on ConfigMap {source}", side.label);
    eventually(WAIT, &what, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("Copied")
                    && e.type_.as_deref() == Some("Normal")
                    && e.involved_object.kind.as_deref() == Some("ConfigMap")
                    && e.involved_object.name.as_deref() == Some(source)
                    && e.source.as_ref().and_then(|s| s.component.as_deref()) == Some(SAMPLE)
            })
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_sample_controller_on_the_oldest_client_go_leads_records_and_applies_as_natively() {
    let client = client().await;
    let mut runs = started_on_two_config_maps(&client, "go-sample", COPY_LABEL, SAMPLE).await;
    runs.each(async |side| copy_holds(side, "before", "greeting", "hello").await)
        .await;
    // It reconciles as the Lease's holder; a module's host name is wasip1's.
    runs.each(async |side| {
        let holder = lease_holder(side).await.unwrap_or_default();
        assert!(!holder.is_empty(), "{}: the Lease is held", side.label);
        if side.build == Build::Wasm {
            assert!(holder.starts_with("wasip1_"), "{holder}");
        }
    })
    .await;

    runs.each(async |side| {
        side.create(&config_map("during", &[COPY_LABEL], &[("a", "1")]))
            .await
    })
    .await;
    runs.each(async |side| copy_holds(side, "during", "a", "1").await)
        .await;
    let patch = json!({ "data": { "a": "2", "b": "3" } });
    runs.each(async |side| side.merge_patch::<ConfigMap>("during", patch.clone()).await)
        .await;
    runs.each(async |side| copy_holds(side, "during", "b", "3").await)
        .await;
    runs.each(async |side| side.delete::<ConfigMap>("before").await)
        .await;
    runs.each(async |side| {
        let what = format!("{}: ConfigMap before-copy deleted", side.label);
        eventually(WAIT, &what, || async {
            side.gone::<ConfigMap>("before-copy").await
        })
        .await;
    })
    .await;
    runs.each(async |side| {
        copy_settled(side, "during").await;
        copied_event(side, "before").await;
        copied_event(side, "during").await;
    })
    .await;

    // The source marked with its data's hash, the copy applied with it and owned by the
    // source: the same on both sides.
    runs.assert_same_state(
        &[ApiResource::erase::<ConfigMap>(&())],
        &[
            "ConfigMap/during",
            "ConfigMap/during-copy",
            "ConfigMap/plain",
        ],
    )
    .await;
    // Stopped, each gives the Lease up (ReleaseOnCancel) before it exits.
    runs.stop(Stop::Term, "stopped", WAIT);
    runs.each(async |side| {
        assert_eq!(
            lease_holder(side).await.as_deref(),
            Some(""),
            "{}: the Lease released",
            side.label
        );
    })
    .await;
}

fn start_operator(namespace: &str, metrics: &str) -> Program {
    let cache = shared_cache();
    wc::start_host(
        "e2e-go-host",
        std::path::Path::new(&cache),
        &[namespace],
        &["--metrics-addr", metrics],
    )
}

#[tokio::test]
async fn a_go_wasm_controller_from_the_registry_is_suspended_while_idle_and_resumed_by_an_event() {
    let client = client().await;
    wc::install_crd();
    let pid = std::process::id();
    let repository = format!("e2e/go-mirror-{pid}");
    registry::push(MODULE, &repository, "v1", &[]);
    let ns = fresh_namespace(&client, "go-wc").await;
    let metrics = free_local_addr().expect("a free port").to_string();
    let mut host = start_operator(&ns, &metrics);

    let mut resource = wc::resource(
        "go-mirror",
        &format!("{}/{repository}:v1", registry::address()),
    );
    // Timers alone decide (`costFactor: 0`): suspends and resumes of a debug host take
    // several times a release host's, and 250 of them would outlast the workqueue's 10 s
    // heartbeat, which would then keep the module resident.
    resource.data["spec"]["suspend"] = json!({"idleAfter": "2s", "costFactor": 0});
    let controllers = wc::api(&client, &ns);
    controllers
        .create(&PostParams::default(), &resource)
        .await
        .expect("created");
    let status: Value = eventually(START, "the Go WasmController Running", || async {
        let object: DynamicObject = controllers.get("go-mirror").await.ok()?;
        let status = object.data.get("status")?.clone();
        (status["phase"] == "Running" || status["phase"] == "Suspended").then_some(status)
    })
    .await;
    assert!(
        status["digest"]
            .as_str()
            .is_some_and(|d| d.starts_with("sha256:")),
        "{status}"
    );

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    cms.create(&PostParams::default(), &mirrored("first"))
        .await
        .expect("create");
    eventually(WAIT, "the Go module mirrors", || async {
        secrets.get_opt("first").await.ok().flatten()
    })
    .await;

    // The host names a WasmController's module `<namespace>.<name>`.
    let module = format!("{ns}.go-mirror");
    eventually(WAIT, "the Go module suspended to disk", || async {
        is_suspended(&scrape(&metrics), &module).then_some(())
    })
    .await;
    let before = scrape(&metrics);
    let resumes_before = value(&before, "kube_wasm_module_resumes_total", &module);
    let suspends = value(&before, "kube_wasm_module_suspends_total", &module);
    assert!(suspends >= 1.0, "suspended at least once: {suspends}");

    // An event while it is suspended resumes it, and it reconciles.
    cms.create(&PostParams::default(), &mirrored("second"))
        .await
        .expect("create");
    eventually(WAIT, "the resumed Go module mirrors", || async {
        secrets.get_opt("second").await.ok().flatten()
    })
    .await;
    let after = scrape(&metrics);
    assert!(
        value(&after, "kube_wasm_module_resumes_total", &module) > resumes_before,
        "the event resumed the module"
    );
    // And it is suspended again once idle.
    eventually(WAIT, "the Go module suspended again", || async {
        is_suspended(&scrape(&metrics), &module).then_some(())
    })
    .await;
    assert_eq!(
        value(
            &scrape(&metrics),
            "kube_wasm_module_restarts_total",
            &module
        ),
        0.0,
        "never restarted"
    );
    host.terminate(WAIT).expect("the host stops");
}

#[tokio::test]
async fn hostile_go_guests_are_ended_and_restarted_alone() {
    let client = client().await;
    let ns = fresh_namespace(&client, "go-hostile").await;
    let dir = scratch_dir().join(format!("go-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let modes = ["spin", "deadlock", "syscall", "signal"];
    let mut entries: Vec<Entry> = modes
        .iter()
        .map(|mode| {
            Entry::new(&format!("hostile-{mode}"), "go-hostile")
                .namespace(&ns)
                .env("HOSTILE_MODE", mode)
        })
        .collect();
    entries.push(Entry::new("mirror", MODULE).namespace(&ns));
    let manifest = write_manifest(&dir, "host.yaml", "entryDeadline: 5s", &entries);
    let kubeconfig = kubeconfig_for(&ns, &dir);
    let metrics = free_local_addr().expect("a free port").to_string();
    let cache = shared_cache();
    let mut host = start_manifest_with(
        &kubeconfig,
        &manifest,
        &["--metrics-addr", &metrics, "--cache-dir", &cache],
    );
    host.stdout
        .wait_for("[mirror] configmap-mirror: watching ConfigMaps", START)
        .expect("the Go mirror started");

    // Each hostile module is ended for what it does, and restarted by its policy.
    for (mode, reason) in [
        ("spin", "ran for more than"),
        ("deadlock", "is deadlocked"),
        ("syscall", "ran for more than"),
        ("signal", "ran for more than"),
    ] {
        let module = format!("hostile-{mode}");
        let what = format!("{module} ended ({reason}) and restarted");
        eventually(START, &what, || async {
            let ended = host
                .stderr
                .snapshot()
                .iter()
                .any(|l| l.contains(&format!("module `{module}`")) && l.contains(reason));
            let restarts = value(
                &scrape(&metrics),
                "kube_wasm_module_restarts_total",
                &module,
            );
            (ended && restarts >= 1.0).then_some(())
        })
        .await;
    }

    // Meanwhile the Go mirror beside them mirrors promptly, and was never restarted.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    cms.create(&PostParams::default(), &mirrored("neighbour"))
        .await
        .expect("create");
    eventually(
        WAIT,
        "the Go mirror mirrors beside hostile modules",
        || async { secrets.get_opt("neighbour").await.ok().flatten() },
    )
    .await;
    assert_eq!(
        value(
            &scrape(&metrics),
            "kube_wasm_module_restarts_total",
            "mirror"
        ),
        0.0
    );
    host.terminate(WAIT).expect("the host stops");
}
