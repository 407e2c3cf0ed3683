//! The finalizer-controller example (`kube::runtime::finalizer` and `events::Recorder` in a
//! `Controller`), run as a wasm module in the host shim and as a native kube-rs build, each
//! in its own namespace, through the same steps — an apiserver restart among them — until
//! both reach the same cluster state.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ApiResource, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use kube_wasm_e2e::state::{assert_same_state, namespace_state};
use kube_wasm_e2e::{
    HostShim, Program, client, eventually, fresh_namespace, kubeconfig_for, restart_apiserver,
    scratch_dir,
};
use std::collections::BTreeMap;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const MODULE: &str = "finalizer-controller";
const LABEL: (&str, &str) = ("kube-wasm.example.com/with-dependent", "true");
const FINALIZER: &str = "kube-wasm.example.com/cleanup-dependent";
const DEPENDENT_OF: &str = "kube-wasm.example.com/dependent-of";

fn config_map(name: &str, labelled: bool, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: labelled.then(|| [(LABEL.0.to_string(), LABEL.1.to_string())].into()),
            ..ObjectMeta::default()
        },
        data: Some(owned(data)),
        ..ConfigMap::default()
    }
}

fn owned(data: &[(&str, &str)]) -> BTreeMap<String, String> {
    data.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// One build of the example, in its own namespace.
struct Run {
    label: &'static str,
    namespace: String,
    program: Program,
    config_maps: Api<ConfigMap>,
    events: Api<Event>,
}

impl Run {
    async fn create(&self, cm: &ConfigMap) {
        self.config_maps
            .create(&PostParams::default(), cm)
            .await
            .unwrap_or_else(|e| panic!("{}: creating {}: {e}", self.label, cm.name_any()));
    }

    async fn delete(&self, name: &str) {
        self.config_maps
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("{}: deleting {name}: {e}", self.label));
    }

    /// Waits until `name` carries the finalizer and its dependent holds `data`.
    async fn wait_applied(&self, name: &str, data: &[(&str, &str)]) {
        let want = owned(data);
        let what = format!(
            "{}: {name} finalized with a dependent holding {want:?}",
            self.label
        );
        eventually(WAIT, &what, || async {
            let cm = self.config_maps.get_opt(name).await.ok()??;
            if !cm.finalizers().iter().any(|f| f == FINALIZER) {
                return None;
            }
            let dependent = self
                .config_maps
                .get_opt(&format!("{name}-dependent"))
                .await
                .ok()??;
            let source = dependent.annotations().get(DEPENDENT_OF);
            (source.map(String::as_str) == Some(name)
                && dependent.data.clone().unwrap_or_default() == want)
                .then_some(())
        })
        .await;
    }

    /// Waits until `name` and its dependent are both gone.
    async fn wait_gone(&self, name: &str) {
        let what = format!("{}: {name} and its dependent deleted", self.label);
        eventually(WAIT, &what, || async {
            let cm = self.config_maps.get_opt(name).await.ok()?;
            let dependent = self
                .config_maps
                .get_opt(&format!("{name}-dependent"))
                .await
                .ok()?;
            (cm.is_none() && dependent.is_none()).then_some(())
        })
        .await;
    }

    /// Waits for an Event with `reason` about `name`, published by the controller.
    async fn wait_event(&self, name: &str, reason: &str) -> Event {
        let what = format!("{}: a {reason} Event about {name}", self.label);
        eventually(WAIT, &what, || async {
            let events = self.events.list(&Default::default()).await.ok()?;
            events.items.into_iter().find(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.reporting_controller.as_deref() == Some(MODULE)
                    && e.regarding.as_ref().is_some_and(|r| {
                        r.kind.as_deref() == Some("ConfigMap") && r.name.as_deref() == Some(name)
                    })
            })
        })
        .await
    }
}

#[tokio::test]
async fn finalizer_controller_wasm_and_native_reach_the_same_state() {
    let client: Client = client().await;

    let mut runs = Vec::new();
    for label in ["wasm", "native"] {
        let namespace = fresh_namespace(&client, &format!("finalizer-{label}")).await;
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        let events: Api<Event> = Api::namespaced(client.clone(), &namespace);
        // Labelled before the controller starts (found by its first list), and one the
        // controller must leave alone.
        for cm in [
            config_map("fin-first", true, &[("a", "1")]),
            config_map("plain", false, &[("b", "2")]),
        ] {
            config_maps
                .create(&PostParams::default(), &cm)
                .await
                .expect("ConfigMap created");
        }
        let kubeconfig = kubeconfig_for(&namespace, &scratch_dir());
        let program = match label {
            "wasm" => HostShim::start(&kubeconfig, &[], MODULE),
            _ => Program::native(MODULE, &kubeconfig),
        };
        runs.push(Run {
            label,
            namespace,
            program,
            config_maps,
            events,
        });
    }
    for run in &runs {
        run.program
            .stdout
            .wait_for("watching ConfigMaps", WAIT)
            .unwrap_or_else(|e| panic!("{} started: {e}", run.label));
    }

    for run in &runs {
        run.wait_applied("fin-first", &[("a", "1")]).await;
    }

    // Created while watching, then updated.
    for run in &runs {
        run.create(&config_map("fin-second", true, &[("x", "1")]))
            .await;
    }
    for run in &runs {
        run.wait_applied("fin-second", &[("x", "1")]).await;
    }
    for run in &runs {
        let patch = serde_json::json!({ "data": { "x": "2", "y": "3" } });
        run.config_maps
            .patch("fin-second", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("patch");
    }
    for run in &runs {
        run.wait_applied("fin-second", &[("x", "2"), ("y", "3")])
            .await;
    }

    // Deleted: the finalizer holds it until the dependent is gone, then it goes.
    for run in &runs {
        run.delete("fin-first").await;
    }
    for run in &runs {
        run.wait_gone("fin-first").await;
    }

    // The apiserver restarts; a create and a delete made right after must still be seen.
    restart_apiserver().expect("apiserver restarted");
    for run in &runs {
        run.create(&config_map(
            "fin-third",
            true,
            &[("z", "after the restart")],
        ))
        .await;
        run.delete("fin-second").await;
    }
    for run in &runs {
        run.wait_applied("fin-third", &[("z", "after the restart")])
            .await;
        run.wait_gone("fin-second").await;
    }

    // Each step was published as an Event about the object.
    for run in &runs {
        for name in ["fin-first", "fin-second", "fin-third"] {
            let event = run.wait_event(name, "DependentApplied").await;
            assert_eq!(event.type_.as_deref(), Some("Normal"));
            assert_eq!(event.action.as_deref(), Some("Apply"));
            assert_eq!(
                event.related.and_then(|r| r.name),
                Some(format!("{name}-dependent"))
            );
        }
        for name in ["fin-first", "fin-second"] {
            run.wait_event(name, "DependentDeleted").await;
        }
    }

    // The unlabelled ConfigMap was left alone.
    for run in &runs {
        let plain = run.config_maps.get("plain").await.expect("get");
        assert!(plain.finalizers().is_empty(), "{}: {plain:?}", run.label);
    }

    // Both builds reached the same state.
    let resources = [ApiResource::erase::<ConfigMap>(&())];
    let wasm = namespace_state(&client, &runs[0].namespace, &resources).await;
    let native = namespace_state(&client, &runs[1].namespace, &resources).await;
    assert_eq!(
        wasm.keys().collect::<Vec<_>>(),
        [
            "ConfigMap/fin-third",
            "ConfigMap/fin-third-dependent",
            "ConfigMap/plain"
        ]
    );
    assert_same_state("wasm", &wasm, "native", &native);

    // Both stop on SIGTERM and exit 0.
    for run in &mut runs {
        let status = run
            .program
            .terminate(WAIT)
            .unwrap_or_else(|e| panic!("{} exits: {e}", run.label));
        assert!(status.success(), "{}: exit status {status}", run.label);
        run.program
            .stdout
            .wait_for("finalizer-controller: stopped", Duration::from_secs(1))
            .unwrap_or_else(|e| panic!("{} stopped gracefully: {e}", run.label));
    }
}
