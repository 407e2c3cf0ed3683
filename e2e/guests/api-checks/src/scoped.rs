//! kube's `unstable-client` methods: `Client::get`, `Client::list` and `Client::fetch` at
//! each scope, with references of each kind, and their failures. One line per observation,
//! free of namespace names (the native and wasm runs use different namespaces).

use k8s_openapi::api::core::v1::{
    ConfigMap, LocalObjectReference, Namespace as NamespaceObject, ObjectReference, Pod,
};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject, ListParams, ObjectMeta, PostParams, ResourceExt};
use kube::client::scope::{Cluster, Namespace};
use kube::prelude::*;
use kube::{Client, Resource};
use std::collections::BTreeMap;

/// Runs the checks in namespace `ns`, leaving nothing behind.
pub async fn checks(client: &Client, ns: &str) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let label = format!("api-checks-scoped={ns}");
    for name in ["scoped-a", "scoped-b"] {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(BTreeMap::from([("api-checks-scoped".into(), ns.into())])),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        cms.create(&PostParams::default(), &cm).await?;
    }

    let scope = Namespace::from(ns);
    let got = client.get::<ConfigMap>("scoped-a", &scope).await?;
    println!(
        "scoped get: {} {}",
        got.name_any(),
        got.namespace() == Some(ns.into())
    );
    let admin = client.get::<ClusterRole>("cluster-admin", &Cluster).await?;
    println!("scoped get cluster: {}", admin.name_any());
    match client.get::<ConfigMap>("scoped-missing", &scope).await {
        Err(kube::Error::Api(s)) => println!("scoped get missing: {} {}", s.code, s.reason),
        other => anyhow::bail!("scoped get missing: expected a 404, got {other:?}"),
    }

    let lp = ListParams::default().labels(&label);
    let here = client.list::<ConfigMap>(&lp, &scope).await?;
    let everywhere = client.list::<ConfigMap>(&lp, &Cluster).await?;
    println!(
        "scoped list: namespace {:?} cluster {:?}",
        here.iter().map(ResourceExt::name_any).collect::<Vec<_>>(),
        everywhere
            .iter()
            .map(ResourceExt::name_any)
            .collect::<Vec<_>>()
    );
    let ns_object = client.get::<NamespaceObject>(ns, &Cluster).await?;
    let from_object = Namespace::try_from(&ns_object)?;
    let limited = client
        .list::<ConfigMap>(&ListParams::default().labels(&label).limit(1), &from_object)
        .await?;
    println!(
        "scoped list limit 1: {} continue={}",
        limited.items.len(),
        limited.metadata.continue_.is_some_and(|c| !c.is_empty())
    );

    let reference = got.object_ref(&());
    let fetched: ConfigMap = client.fetch(&reference).await?;
    let dynamic: DynamicObject = client.fetch(&reference).await?;
    println!(
        "scoped fetch: {} dynamic kind {:?}",
        fetched.name_any(),
        dynamic.types.map(|t| t.kind)
    );
    match client.fetch::<Pod>(&reference).await {
        Err(e @ kube::Error::SerdeError(_)) => println!("scoped fetch wrong type: {e}"),
        other => anyhow::bail!("scoped fetch wrong type: expected a SerdeError, got {other:?}"),
    }
    let unnamed = ObjectReference {
        name: None,
        ..reference.clone()
    };
    match client.fetch::<ConfigMap>(&unnamed).await {
        Err(e @ kube::Error::RefResolve(_)) => println!("scoped fetch unnamed: {e}"),
        other => anyhow::bail!("scoped fetch unnamed: expected RefResolve, got {other:?}"),
    }
    let local = LocalObjectReference {
        name: "scoped-b".into(),
    };
    let placed: ConfigMap = client.fetch(&local.within(Some(ns.to_string()))).await?;
    println!("scoped fetch local: {}", placed.name_any());
    let owner = OwnerReference {
        api_version: "v1".into(),
        kind: "Namespace".into(),
        name: ns.into(),
        uid: ns_object.uid().unwrap_or_default(),
        ..OwnerReference::default()
    };
    let owner_ns: NamespaceObject = client.fetch(&owner).await?;
    println!("scoped fetch owner: {}", owner_ns.name_any() == ns);
    let cm_owner = OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "scoped-a".into(),
        uid: got.uid().unwrap_or_default(),
        ..OwnerReference::default()
    };
    let placed: ConfigMap = client
        .fetch(&NamespacedRef::<ConfigMap>::within(
            &cm_owner,
            ns.to_string(),
        ))
        .await?;
    println!("scoped fetch placed owner: {}", placed.name_any());

    for name in ["scoped-a", "scoped-b"] {
        cms.delete(name, &Default::default()).await?;
    }
    Ok(())
}
