//! The host's environment (SPEC.md, "Environment") as `Config` and the client's default
//! namespace. Its own test binary with a single test: it sets process environment
//! variables, which no other thread may read concurrently.

// `std::env::set_var` is `unsafe` in edition 2024; see the SAFETY notes below.
#![allow(unsafe_code)]

use k8s_openapi::api::core::v1::Pod;
use kube_wasm_client::config::{KubeConfigOptions, KubeconfigError};
use kube_wasm_client::{Api, Client, Config};
use kube_wasm_guest::fake::FakeHost;

#[test]
fn default_namespace_and_cluster_url_come_from_the_host_environment() {
    // SAFETY: this binary has exactly one test, so no other thread reads the environment.
    unsafe {
        std::env::set_var("KUBE_WASM_CLUSTER_URL", "https://10.96.0.1:443");
        std::env::set_var("KUBE_WASM_DEFAULT_NAMESPACE", "tenant-7");
    }
    let host = FakeHost::install();
    let mut task = host.spawn(async {
        let config = Config::infer().await.expect("host environment is complete");
        let client = Client::try_default().await.expect("client");
        let named = Config::from_kubeconfig(&KubeConfigOptions {
            context: Some("other".into()),
            ..KubeConfigOptions::default()
        })
        .await;
        let current = Config::from_kubeconfig(&KubeConfigOptions::default()).await;
        (config, client, named, current)
    });
    host.run_until_stalled();
    let (config, client, named, current) = task.output().expect("no I/O: done at once");

    assert_eq!(config.default_namespace, "tenant-7");
    assert_eq!(config.cluster_url, "https://10.96.0.1:443/");
    assert_eq!(client.default_namespace(), "tenant-7");
    let pods: Api<Pod> = Api::default_namespaced(client);
    assert_eq!(pods.resource_url(), "/api/v1/namespaces/tenant-7/pods");

    assert!(
        matches!(named, Err(KubeconfigError::LoadContext(_))),
        "{named:?}"
    );
    assert_eq!(current.expect("host context").default_namespace, "tenant-7");
    let incluster = Config::incluster().expect("same as infer");
    assert_eq!(incluster.default_namespace, "tenant-7");

    // An empty namespace falls back to `default`, as kube does.
    // SAFETY: as above.
    unsafe { std::env::set_var("KUBE_WASM_DEFAULT_NAMESPACE", "") };
    assert_eq!(
        Config::incluster().expect("valid").default_namespace,
        "default"
    );
}
