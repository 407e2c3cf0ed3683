//! The configmap-generator example (a CRD and a `Controller` that owns ConfigMaps), run as a
//! wasm module in the host shim and as a native kube-rs build, each in its own namespace,
//! through the same steps — an apiserver restart among them — until both reach the same
//! cluster state.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, ResourceExt,
};
use kube::{Client, Resource};
use kube_wasm_e2e::objects::{generator_resource, wait_crd_established};
use kube_wasm_e2e::state::{assert_same_state, namespace_state};
use kube_wasm_e2e::{
    HostShim, Program, client, env_path, eventually, fresh_namespace, kubeconfig_for,
    restart_apiserver, scratch_dir,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const MODULE: &str = "configmap-generator";

/// The example's CRD, as its native build prints it (`configmap-generator crd`).
fn example_crd() -> CustomResourceDefinition {
    let out = std::process::Command::new(env_path("KUBE_WASM_NATIVE_BIN").join(MODULE))
        .arg("crd")
        .output()
        .expect("configmap-generator crd runs");
    assert!(out.status.success(), "configmap-generator crd: {out:?}");
    serde_json::from_slice(&out.stdout).expect("the CRD is JSON")
}

/// Creates the CRD (or, when it exists from an earlier run, applies this build's version of
/// it) and waits until the apiserver has established it.
async fn install_crd(client: &Client, crd: &CustomResourceDefinition) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd.name_any();
    match crds.create(&PostParams::default(), crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {
            crds.patch(
                &name,
                &PatchParams::apply("kube-wasm-e2e").force(),
                &Patch::Apply(crd),
            )
            .await
            .expect("CRD updated");
        }
        Err(e) => panic!("creating the CRD: {e}"),
    }
    wait_crd_established(&crds, &name, WAIT).await;
}

/// One build of the example, in its own namespace.
struct Run {
    label: &'static str,
    namespace: String,
    program: Program,
    generators: Api<DynamicObject>,
    config_maps: Api<ConfigMap>,
}

impl Run {
    async fn create_generator(&self, name: &str, spec: Value) {
        let obj = DynamicObject::new(name, &generator_resource()).data(json!({ "spec": spec }));
        self.generators
            .create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("{}: creating generator {name}: {e}", self.label));
    }

    async fn patch_spec(&self, name: &str, spec: Value) {
        self.generators
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": spec })),
            )
            .await
            .unwrap_or_else(|e| panic!("{}: patching generator {name}: {e}", self.label));
    }

    /// Waits until generator `name` at `generation` has its ConfigMap, owned by it, holding
    /// exactly `data`, and its status says so; returns the ConfigMap.
    async fn wait_generated(
        &self,
        name: &str,
        generation: i64,
        data: &[(&str, &str)],
    ) -> ConfigMap {
        let want: BTreeMap<String, String> = data
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let what = format!(
            "{}: ConfigMap {name} from generation {generation} holding {want:?}",
            self.label
        );
        eventually(WAIT, &what, || async {
            let generator = self.generators.get_opt(name).await.ok()??;
            let status = &generator.data["status"];
            if generator.metadata.generation != Some(generation)
                || status["observedGeneration"] != json!(generation)
                || status["configMap"] != json!(name)
            {
                return None;
            }
            let cm = self.config_maps.get_opt(name).await.ok()??;
            let owned = cm.owner_references().iter().any(|o| {
                o.controller == Some(true)
                    && o.kind == "ConfigMapGenerator"
                    && o.name == name
                    && Some(&o.uid) == generator.meta().uid.as_ref()
            });
            (owned && cm.data.clone().unwrap_or_default() == want).then_some(cm)
        })
        .await
    }

    /// The lines of the program's output (the module's, for the host shim).
    fn output(&self) -> Vec<String> {
        match self.label {
            "wasm" => self.program.module_output(MODULE),
            _ => self.program.stdout.snapshot(),
        }
    }
}

#[tokio::test]
async fn configmap_generator_wasm_and_native_reach_the_same_state() {
    let client = client().await;
    install_crd(&client, &example_crd()).await;

    let mut runs = Vec::new();
    for label in ["wasm", "native"] {
        let namespace = fresh_namespace(&client, &format!("cmgen-{label}")).await;
        let generators: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &namespace, &generator_resource());
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        // Generators that exist before the controller starts come with its first list.
        let obj = DynamicObject::new("gen-first", &generator_resource())
            .data(json!({ "spec": { "content": "one" } }));
        generators
            .create(&PostParams::default(), &obj)
            .await
            .expect("generator created");
        let kubeconfig = kubeconfig_for(&namespace, &scratch_dir());
        let program = match label {
            "wasm" => HostShim::start(&kubeconfig, &[], MODULE),
            _ => Program::native(MODULE, &kubeconfig),
        };
        runs.push(Run {
            label,
            namespace,
            program,
            generators,
            config_maps,
        });
    }
    for run in &runs {
        run.program
            .stdout
            .wait_for("watching ConfigMapGenerators", WAIT)
            .unwrap_or_else(|e| panic!("{} started: {e}", run.label));
    }

    // The generator listed at start.
    for run in &runs {
        run.wait_generated("gen-first", 1, &[("content", "one")])
            .await;
    }

    // A generator created while watching, with its own key.
    for run in &runs {
        run.create_generator("gen-second", json!({ "content": "hi", "key": "greeting" }))
            .await;
    }
    for run in &runs {
        run.wait_generated("gen-second", 1, &[("greeting", "hi")])
            .await;
    }

    // A spec update: a new generation, the same ConfigMap updated.
    for run in &runs {
        run.patch_spec("gen-second", json!({ "content": "bonjour" }))
            .await;
    }
    let mut recreated_from = Vec::new();
    for run in &runs {
        let cm = run
            .wait_generated("gen-second", 2, &[("greeting", "bonjour")])
            .await;
        recreated_from.push(cm.uid());
    }

    // The owned ConfigMap deleted by hand: the owner is reconciled and recreates it.
    for run in &runs {
        run.config_maps
            .delete("gen-second", &DeleteParams::default())
            .await
            .expect("ConfigMap deleted");
    }
    for (run, old_uid) in runs.iter().zip(&recreated_from) {
        eventually(
            WAIT,
            &format!("{}: gen-second recreated", run.label),
            || async {
                let cm = run.config_maps.get_opt("gen-second").await.ok()??;
                (cm.uid() != *old_uid).then_some(())
            },
        )
        .await;
        run.wait_generated("gen-second", 2, &[("greeting", "bonjour")])
            .await;
    }

    // A generator deleted: without a garbage collector its ConfigMap stays, and the
    // controller leaves it alone.
    let mut orphan_versions = Vec::new();
    for run in &runs {
        let cm = run.config_maps.get("gen-first").await.expect("get");
        orphan_versions.push(cm.resource_version());
        run.generators
            .delete("gen-first", &DeleteParams::default())
            .await
            .expect("generator deleted");
    }
    for run in &runs {
        eventually(WAIT, &format!("{}: gen-first gone", run.label), || async {
            run.generators
                .get_opt("gen-first")
                .await
                .ok()?
                .is_none()
                .then_some(())
        })
        .await;
    }

    // The apiserver restarts; changes made right after must still be seen.
    restart_apiserver().expect("apiserver restarted");
    for run in &runs {
        run.create_generator("gen-third", json!({ "content": "after the restart" }))
            .await;
        run.patch_spec("gen-second", json!({ "content": "still watching" }))
            .await;
    }
    for run in &runs {
        run.wait_generated("gen-third", 1, &[("content", "after the restart")])
            .await;
        run.wait_generated("gen-second", 3, &[("greeting", "still watching")])
            .await;
    }

    // The deleted generator's ConfigMap was left as it was, and its reconciliations
    // were not retried in a loop: the error policy never ran for it, and only the
    // triggers (its deletion, relists of the ConfigMaps) asked for it.
    for (run, version) in runs.iter().zip(&orphan_versions) {
        let cm = run.config_maps.get("gen-first").await.expect("get");
        assert_eq!(
            cm.resource_version(),
            *version,
            "{}: the orphaned ConfigMap was not touched",
            run.label
        );
        assert_eq!(cm.data, Some([("content".into(), "one".into())].into()));
        let output = run.output();
        let retried: Vec<&String> = output
            .iter()
            .filter(|l| l.contains("reconciling gen-first failed"))
            .collect();
        assert!(retried.is_empty(), "{}: {retried:#?}", run.label);
        let missing = output
            .iter()
            .filter(|l| l.contains("not found in local store") && l.contains("/gen-first"))
            .count();
        assert!(
            missing <= 5,
            "{}: gen-first looked up {missing} times after its deletion:\n{}",
            run.label,
            output.join("\n")
        );
    }

    // Both builds reached the same state.
    let resources = [generator_resource(), ApiResource::erase::<ConfigMap>(&())];
    let wasm = namespace_state(&client, &runs[0].namespace, &resources).await;
    let native = namespace_state(&client, &runs[1].namespace, &resources).await;
    assert_eq!(
        wasm.keys().collect::<Vec<_>>(),
        [
            "ConfigMap/gen-first",
            "ConfigMap/gen-second",
            "ConfigMap/gen-third",
            "ConfigMapGenerator/gen-second",
            "ConfigMapGenerator/gen-third",
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
            .wait_for("configmap-generator: stopped", Duration::from_secs(1))
            .unwrap_or_else(|e| panic!("{} stopped gracefully: {e}", run.label));
    }
}
