//! Mirrors every ConfigMap labelled `kube-wasm.dev/mirror=true` in the client's default
//! namespace into a Secret of the same name, keeps the Secret's data in sync, and deletes
//! the Secret when the ConfigMap goes away.
//!
//! A plain list-then-watch loop over `Api`, the way a kube-rs user writes one before reaching
//! for `kube::runtime`: list and reconcile everything, watch from the list's resourceVersion,
//! and relist when the watch ends or the server answers 410 Gone.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, ResourceExt, WatchEvent,
    WatchParams,
};
use kube::{Client, Resource};
use std::collections::BTreeMap;
use std::time::Duration;

const SELECTOR: &str = "kube-wasm.dev/mirror=true";
const MIRRORED_FROM: &str = "kube-wasm.dev/mirrored-from";
const MANAGER: &str = "configmap-mirror";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    println!(
        "configmap-mirror: watching ConfigMaps with {SELECTOR} in namespace {}",
        client.default_namespace()
    );
    tokio::select! {
        result = run(client) => result,
        _ = tokio::signal::ctrl_c() => {
            println!("configmap-mirror: stop requested, exiting");
            Ok(())
        }
    }
}

async fn run(client: Client) -> anyhow::Result<()> {
    let config_maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let secrets: Api<Secret> = Api::default_namespaced(client);
    loop {
        let list = config_maps
            .list(&ListParams::default().labels(SELECTOR))
            .await?;
        for cm in &list.items {
            reconcile(&secrets, cm).await?;
        }
        prune(&secrets, &list.items).await?;
        let version = list.metadata.resource_version.unwrap_or_default();
        let wp = WatchParams::default().labels(SELECTOR).timeout(60);
        let mut events = config_maps.watch(&wp, &version).await?.boxed();
        while let Some(event) = events.try_next().await? {
            match event {
                WatchEvent::Added(cm) | WatchEvent::Modified(cm) => {
                    reconcile(&secrets, &cm).await?
                }
                WatchEvent::Deleted(cm) => remove(&secrets, &cm.name_any()).await?,
                WatchEvent::Bookmark(_) => {}
                WatchEvent::Error(status) if status.code == 410 => {
                    println!(
                        "configmap-mirror: watch expired ({}), relisting",
                        status.message
                    );
                    break;
                }
                WatchEvent::Error(status) => return Err(kube::Error::Api(status).into()),
            }
        }
    }
}

/// Applies the Secret that mirrors `cm` (server-side apply, so re-applying is idempotent).
async fn reconcile(secrets: &Api<Secret>, cm: &ConfigMap) -> anyhow::Result<()> {
    let name = cm.name_any();
    let data: BTreeMap<String, ByteString> = cm
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
        .collect();
    let owner = cm.controller_owner_ref(&()).map(|mut o: OwnerReference| {
        o.controller = Some(false);
        o
    });
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some([(MIRRORED_FROM.to_string(), name.clone())].into()),
            owner_references: owner.map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        data: Some(data),
        type_: Some("Opaque".into()),
        ..Secret::default()
    };
    let mut secret = serde_json::to_value(&secret)?;
    secret["apiVersion"] = "v1".into();
    secret["kind"] = "Secret".into();
    let params = PatchParams::apply(MANAGER).force();
    tokio::time::timeout(
        Duration::from_secs(30),
        secrets.patch(&name, &params, &Patch::Apply(&secret)),
    )
    .await??;
    println!("configmap-mirror: mirrored ConfigMap {name} into Secret {name}");
    Ok(())
}

/// Deletes mirrored Secrets whose ConfigMap is gone (deleted while we were not watching).
async fn prune(secrets: &Api<Secret>, live: &[ConfigMap]) -> anyhow::Result<()> {
    let mirrored = secrets
        .list(&ListParams::default().labels(MIRRORED_FROM))
        .await?;
    for secret in mirrored {
        let source = secret
            .labels()
            .get(MIRRORED_FROM)
            .cloned()
            .unwrap_or_default();
        if !live.iter().any(|cm| cm.name_any() == source) {
            remove(secrets, &secret.name_any()).await?;
        }
    }
    Ok(())
}

async fn remove(secrets: &Api<Secret>, name: &str) -> anyhow::Result<()> {
    match secrets.delete(name, &DeleteParams::default()).await {
        Ok(_) => println!("configmap-mirror: deleted Secret {name}"),
        Err(kube::Error::Api(status)) if status.is_not_found() => {}
        Err(e) => return Err(e.into()),
    }
    Ok(())
}
