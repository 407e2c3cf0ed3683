//! Suspend to disk against the real apiserver: two examples run with a very short `idleAfter`,
//! so they are suspended between almost every event. The configmap-generator `Controller`
//! reconciles changes that arrive while it is suspended, and its error requeue (a host timer
//! pending while suspended) still fires and retries until the generator is fixed; the
//! store-reader's reflector `Store`, suspended and resumed every second, still holds every
//! object it listed and follows later changes. Both resume to receive the stop request and
//! exit cleanly. The metrics endpoint shows the suspends and resumes.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube_wasm_e2e::manifest::{Entry, start_manifest_with, write_manifest};
use kube_wasm_e2e::metrics::{free_local_addr, scrape};
use kube_wasm_e2e::objects::{config_map, generator_resource, install_crd, native_crd};
use kube_wasm_e2e::{client, eventually, fresh_namespace, kubeconfig_for, scratch_dir};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

/// The value of `metric{module="name"}`, 0 if absent.
fn value(text: &str, metric: &str, module: &str) -> f64 {
    let prefix = format!("{metric}{{module=\"{module}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0.0, |v| v.trim().parse().expect("a number"))
}

fn is_suspended(text: &str, module: &str) -> bool {
    text.lines().any(|l| {
        l == format!("kube_wasm_module_state{{module=\"{module}\",state=\"suspended\"}} 1")
    })
}

/// Waits until generator `name` at `generation` has its ConfigMap holding exactly `data` and
/// its status says so.
async fn wait_generated(
    generators: &Api<DynamicObject>,
    config_maps: &Api<ConfigMap>,
    name: &str,
    generation: i64,
    data: &[(&str, &str)],
) {
    let want: BTreeMap<String, String> = data
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let what = format!("ConfigMap {name} from generation {generation} holding {want:?}");
    eventually(WAIT, &what, || async {
        let generator = generators.get_opt(name).await.ok()??;
        let status = &generator.data["status"];
        if generator.metadata.generation != Some(generation)
            || status["observedGeneration"] != json!(generation)
        {
            return None;
        }
        let cm = config_maps.get_opt(name).await.ok()??;
        (cm.data.clone().unwrap_or_default() == want).then_some(())
    })
    .await;
}

/// Waits until the store-reader's summary holds `want`.
async fn wait_summary(cms: &Api<ConfigMap>, want: &[(&str, &str)]) {
    let want: BTreeMap<String, String> = want
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    eventually(WAIT, &format!("the summary {want:?}"), || async {
        let summary = cms.get_opt("store-summary").await.ok()??;
        (summary.data.unwrap_or_default() == want).then_some(())
    })
    .await;
}

fn generator(name: &str, spec: Value) -> DynamicObject {
    DynamicObject::new(name, &generator_resource()).data(json!({ "spec": spec }))
}

#[tokio::test]
async fn suspended_controllers_keep_their_state_and_requeues_and_reconcile_the_next_change() {
    let client = client().await;
    install_crd(
        &client,
        &native_crd("configmap-generator"),
        "kube-wasm-e2e",
        WAIT,
    )
    .await;
    let gen_ns = fresh_namespace(&client, "suspend-gen").await;
    let store_ns = fresh_namespace(&client, "suspend-store").await;
    let generators: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &gen_ns, &generator_resource());
    let gen_cms: Api<ConfigMap> = Api::namespaced(client.clone(), &gen_ns);
    let store_cms: Api<ConfigMap> = Api::namespaced(client.clone(), &store_ns);
    let label = ("kube-wasm.dev/store", "true");
    for cm in [
        config_map("a", &[label], &[]),
        config_map("settings", &[label], &[("mode", "fast")]),
    ] {
        store_cms
            .create(&PostParams::default(), &cm)
            .await
            .expect("create");
    }

    let dir = scratch_dir().join(format!("suspend-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let snapshots = dir.join("snapshots");
    let manifest = write_manifest(
        &dir,
        "host.yaml",
        &format!(
            "suspendDir: {}",
            serde_json::to_string(&snapshots.to_string_lossy()).expect("json")
        ),
        // Timers alone decide (`costFactor: 0`): the test wants the reader suspended between
        // its one-second ticks and the generator between its 5 s requeues, which a debug
        // host's suspends and resumes are too slow for at the default factor.
        &[
            Entry::new("generator", "configmap-generator")
                .namespace(&gen_ns)
                .field("suspend: {idleAfter: 500ms, costFactor: 0}"),
            Entry::new("reader", "store-reader")
                .namespace(&store_ns)
                .field("suspend: {idleAfter: 300ms, costFactor: 0}"),
        ],
    );
    let kubeconfig = kubeconfig_for("default", &dir);
    let metrics = free_local_addr().expect("a free port").to_string();
    let mut host = start_manifest_with(&kubeconfig, &manifest, &["--metrics-addr", &metrics]);

    // The generator reconciles its first object, then goes idle and is suspended.
    generators
        .create(
            &PostParams::default(),
            &generator("one", json!({"content": "v1"})),
        )
        .await
        .expect("create generator");
    wait_generated(&generators, &gen_cms, "one", 1, &[("content", "v1")]).await;
    eventually(WAIT, "the generator suspended", || async {
        is_suspended(&scrape(&metrics), "generator").then_some(())
    })
    .await;
    let before = scrape(&metrics);
    let resumes_before = value(&before, "kube_wasm_module_resumes_total", "generator");

    // A change while it is suspended: the watch event resumes it and it reconciles.
    generators
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"content": "v2", "key": "value"}})),
        )
        .await
        .expect("patch");
    wait_generated(&generators, &gen_cms, "one", 2, &[("value", "v2")]).await;
    let after = scrape(&metrics);
    assert!(
        value(&after, "kube_wasm_module_resumes_total", "generator") > resumes_before,
        "the change resumed the generator"
    );

    // A reconcile that fails (a key the apiserver refuses) is requeued in 5 s by the
    // error policy: the module is suspended in between, and the requeue still fires.
    generators
        .create(
            &PostParams::default(),
            &generator("broken", json!({"content": "x", "key": "not/a/key"})),
        )
        .await
        .expect("create broken generator");
    let failures = |host: &kube_wasm_e2e::HostShim| {
        host.module_output("generator")
            .iter()
            .filter(|l| l.contains("reconciling broken failed"))
            .count()
    };
    eventually(WAIT, "the first failed reconcile", || async {
        (failures(&host) >= 1).then_some(())
    })
    .await;
    let suspends_at_first_failure = value(
        &scrape(&metrics),
        "kube_wasm_module_suspends_total",
        "generator",
    );
    eventually(WAIT, "two requeued retries", || async {
        (failures(&host) >= 3).then_some(())
    })
    .await;
    let suspends_at_third_failure = value(
        &scrape(&metrics),
        "kube_wasm_module_suspends_total",
        "generator",
    );
    assert!(
        suspends_at_third_failure >= suspends_at_first_failure + 2.0,
        "suspended before each requeue fired ({suspends_at_first_failure} → \
         {suspends_at_third_failure})"
    );
    generators
        .patch(
            "broken",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"key": "fixed"}})),
        )
        .await
        .expect("fix the generator");
    wait_generated(&generators, &gen_cms, "broken", 2, &[("fixed", "x")]).await;

    // The store-reader is suspended between its one-second ticks; its reflector store keeps
    // what it listed and follows changes made after many suspends.
    wait_summary(
        &store_cms,
        &[
            ("count", "2"),
            ("names", "a,settings"),
            ("primary", "none"),
            ("mode", "fast"),
        ],
    )
    .await;
    let resumed_before = value(
        &scrape(&metrics),
        "kube_wasm_module_resumes_total",
        "reader",
    );
    let started = Instant::now();
    eventually(WAIT, "the reader resumed three more times", || async {
        let resumed = value(
            &scrape(&metrics),
            "kube_wasm_module_resumes_total",
            "reader",
        );
        (resumed >= resumed_before + 3.0).then_some(())
    })
    .await;
    eprintln!(
        "the reader was resumed 3 more times (after {resumed_before}) in {:?}",
        started.elapsed()
    );
    store_cms
        .create(
            &PostParams::default(),
            &config_map("b", &[label, ("role", "primary")], &[]),
        )
        .await
        .expect("create b");
    store_cms
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"mode": "slow"}})),
        )
        .await
        .expect("patch settings");
    wait_summary(
        &store_cms,
        &[
            ("count", "3"),
            ("names", "a,b,settings"),
            ("primary", "b"),
            ("mode", "slow"),
        ],
    )
    .await;

    let text = scrape(&metrics);
    for module in ["generator", "reader"] {
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.contains(&format!("module=\"{module}\""))
                    && (l.contains("suspend")
                        || l.contains("resume")
                        || l.contains("snapshot")
                        || l.contains("memory_bytes"))
                    && !l.contains("_bucket")
            })
            .collect();
        eprintln!("{module}:\n  {}", lines.join("\n  "));
        assert!(value(&text, "kube_wasm_module_suspends_total", module) >= 1.0);
        assert!(
            value(
                &text,
                "kube_wasm_module_resume_duration_seconds_count",
                module
            ) >= 1.0
        );
        assert_eq!(
            value(&text, "kube_wasm_module_suspend_failures_total", module),
            0.0,
            "{module}: every snapshot was written"
        );
    }

    // Both asked for the stop signal: a suspended one is resumed to receive it.
    let status = host.terminate(Duration::from_secs(30)).expect("host exits");
    assert!(status.success(), "both modules stop cleanly: {status}");
    for module in ["generator", "reader"] {
        assert!(
            host.stderr
                .snapshot()
                .iter()
                .any(|l| l.contains(&format!("module `{module}` exited cleanly"))),
            "{module} exited cleanly"
        );
    }
    assert!(
        !host
            .stderr
            .snapshot()
            .iter()
            .any(|l| l.contains("restarting module") || l.contains("stays resident")),
        "no module failed or stayed resident"
    );
    let left = std::fs::read_dir(&snapshots)
        .map(|d| d.count())
        .unwrap_or_default();
    assert_eq!(left, 0, "the host removed its snapshot folder");
}
