//! Client, every `Api` method, the params builders, `Client::send` with `client::Body`, and
//! kube's errors, as kube 5.0 code.

use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use http_body_util::BodyExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, ServiceAccount};
use kube::api::{
    Api, DeleteParams, DynamicObject, EvictParams, GetParams, ListParams, LogParams, Patch,
    PatchParams, PostParams, ResourceExt, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use kube::{Client, Config, Error};

fn assert_send<T: Send>(_: &T) {}

async fn client() -> anyhow::Result<Client> {
    let config = Config::infer().await?;
    let _namespace: &str = &config.default_namespace;
    let client = Client::try_from(config)?;
    let _default = Client::try_default().await?;
    let _version = client.apiserver_version().await?;
    let _ns: &str = client.default_namespace();
    Ok(client)
}

async fn core_methods(client: Client) -> Result<(), Error> {
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let _in_ns: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    let _all: Api<ConfigMap> = Api::all(client.clone());
    let _: Option<&str> = cms.namespace();
    let _: &str = cms.resource_url();

    let get = cms.get("a");
    assert_send(&get);
    let cm: ConfigMap = get.await?;
    let _: Option<ConfigMap> = cms.get_opt("a").await?;
    let _: ConfigMap = cms.get_with("a", &GetParams::any()).await?;
    let _ = cms.get_metadata("a").await?;
    let _ = cms.get_metadata_opt("a").await?;
    let _ = cms.get_metadata_with("a", &GetParams::default()).await?;
    let _ = cms
        .get_metadata_opt_with("a", &GetParams::default())
        .await?;

    let lp = ListParams::default()
        .labels("app=x")
        .fields("metadata.name=a")
        .limit(10);
    for item in cms.list(&lp).await? {
        let _: String = item.name_any();
    }
    let _ = cms
        .list_metadata(&ListParams::default().match_any())
        .await?;

    let pp = PostParams {
        dry_run: true,
        field_manager: Some("surface".into()),
    };
    let _: ConfigMap = cms.create(&pp, &cm).await?;
    let _: ConfigMap = cms.replace("a", &PostParams::default(), &cm).await?;

    let patch = serde_json::json!({ "data": { "k": "v" } });
    let ssa = PatchParams::apply("surface").force();
    let _: ConfigMap = cms.patch("a", &ssa, &Patch::Apply(&patch)).await?;
    let _: ConfigMap = cms
        .patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let _: ConfigMap = cms
        .patch("a", &PatchParams::default(), &Patch::Strategic(&patch))
        .await?;
    let json_patch: json_patch::Patch =
        serde_json::from_value(serde_json::json!([])).map_err(Error::SerdeError)?;
    let _: ConfigMap = cms
        .patch("a", &PatchParams::default(), &Patch::Json::<()>(json_patch))
        .await?;
    let _ = cms
        .patch_metadata("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;

    let dp = DeleteParams::background().dry_run().grace_period(5);
    let deleted = cms.delete("a", &dp).await?;
    let _ = deleted
        .map_left(|cm| cm.name_any())
        .map_right(|status| status.is_success());
    let _ = DeleteParams::foreground();
    let _ = DeleteParams::orphan();
    let _ = cms.delete_collection(&DeleteParams::default(), &lp).await?;

    let _ = WatchParams::streaming_lists();
    let wp = WatchParams::default().labels("app=x").timeout(60);
    let stream = cms.watch(&wp, "0").await?;
    assert_send(&stream);
    let mut stream = stream.boxed();
    while let Some(event) = stream.try_next().await? {
        match event {
            WatchEvent::Added(cm) | WatchEvent::Modified(cm) | WatchEvent::Deleted(cm) => {
                let _ = cm.resource_version();
            }
            WatchEvent::Bookmark(bookmark) => {
                let _ = bookmark.metadata.resource_version;
            }
            WatchEvent::Error(status) => {
                let _ = status.code;
            }
        }
    }
    let _ = cms.watch_metadata(&wp, "0").await?.boxed();

    let entry = cms.entry("a").await?;
    let _ = entry
        .or_insert(ConfigMap::default)
        .and_modify(|cm| {
            cm.labels_mut().insert("k".into(), "v".into());
        })
        .commit(&PostParams::default())
        .await;
    let _: Api<ConfigMap> = cms.clone();
    let _: Client = cms.into_client();
    Ok(())
}

async fn subresources(client: Client) -> Result<(), Error> {
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let logs: String = pods
        .logs(
            "p",
            &LogParams {
                container: Some("c".into()),
                tail_lines: Some(10),
                ..LogParams::default()
            },
        )
        .await?;
    let _ = logs;
    let mut lines = pods.log_stream("p", &LogParams::default()).await?.lines();
    while let Some(line) = lines.try_next().await.map_err(Error::ReadEvents)? {
        let _: String = line;
    }
    let _ = pods.evict("p", &EvictParams::default()).await?;
    let _: Pod = pods.get_status("p").await?;
    let _: Pod = pods.get_ephemeral_containers("p").await?;
    let _: Pod = pods.get_resize("p").await?;
    let _: Pod = pods.get_subresource("ephemeralcontainers", "p").await?;

    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let scale = deployments.get_scale("d").await?;
    let _ = deployments
        .replace_scale("d", &PostParams::default(), &scale)
        .await?;
    let patch = serde_json::json!({ "spec": { "replicas": 2 } });
    let _ = deployments
        .patch_scale("d", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let _: Deployment = deployments
        .patch_status("d", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let _: Deployment = deployments
        .replace_status("d", &PostParams::default(), &Deployment::default())
        .await?;
    let _: Deployment = deployments.restart("d").await?;

    let nodes: Api<Node> = Api::all(client.clone());
    let _: Node = nodes.cordon("n").await?;
    let _: Node = nodes.uncordon("n").await?;

    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let _ = csrs.get_approval("c").await?;
    let approve = serde_json::json!({ "status": { "conditions": [] } });
    let _: CertificateSigningRequest = csrs
        .patch_approval("c", &PatchParams::default(), &Patch::Merge(&approve))
        .await?;

    let service_accounts: Api<ServiceAccount> = Api::default_namespaced(client.clone());
    let _: TokenRequest = service_accounts
        .create_token_request("sa", &PostParams::default(), &TokenRequest::default())
        .await?;

    let pod = Pod::default();
    let containers = serde_json::json!({ "spec": { "ephemeralContainers": [] } });
    let _: Pod = pods
        .patch_ephemeral_containers("p", &PatchParams::default(), &Patch::Merge(&containers))
        .await?;
    let _: Pod = pods
        .replace_ephemeral_containers("p", &PostParams::default(), &pod)
        .await?;
    let resources = serde_json::json!({ "spec": { "containers": [] } });
    let _: Pod = pods
        .patch_resize("p", &PatchParams::default(), &Patch::Merge(&resources))
        .await?;
    let _: Pod = pods
        .replace_resize("p", &PostParams::default(), &pod)
        .await?;
    let _: Pod = pods
        .patch_subresource(
            "status",
            "p",
            &PatchParams::default(),
            &Patch::Merge(&resources),
        )
        .await?;
    let _: Pod = pods
        .replace_subresource("status", "p", &PostParams::default(), &pod)
        .await?;
    let _: TokenRequest = service_accounts
        .create_subresource(
            "token",
            "sa",
            &PostParams::default(),
            &TokenRequest::default(),
        )
        .await?;

    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let resource = ApiResource::from_gvk(&gvk);
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "ns", &resource);
    let _: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let _: Api<DynamicObject> = Api::default_namespaced_with(client.clone(), &resource);
    let _ = widgets.get("w").await?;
    let any_ns: Api<DynamicObject> = Api::dynamic(client.clone(), &resource, &Scope::Namespaced);
    let in_ns: Api<DynamicObject> = any_ns.constrain("team-a");
    let _: Api<DynamicObject> = in_ns.unconstrain().constrain_default();
    Ok(())
}

/// `Client::send`: the raw `http::Request<Body>` → `http::Response<Body>` path, where every
/// status is a response, and `Body`'s constructors, readers and `http_body::Body` impl.
async fn raw_send(client: &Client) -> Result<(), Error> {
    use kube::client::{Body, DynBody};
    let request = http::Request::get("/api/v1/namespaces/default/configmaps/missing")
        .body(Body::empty())
        .map_err(Error::HttpError)?;
    let future = client.send(request);
    assert_send(&future);
    let response: http::Response<Body> = future.await?;
    let _: http::StatusCode = response.status();
    let _: Option<&http::HeaderValue> = response.headers().get(http::header::CONTENT_TYPE);
    let body = response.into_body();
    let _: Option<Body> = body.try_clone();
    let bytes = body.collect_bytes().await?;
    let again = Body::from(bytes.clone());
    let _ = Body::from(bytes.to_vec()).try_clone();
    let _ = again.collect().await?.to_bytes();

    let post = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(br#"{"metadata":{"name":"raw"}}"#.to_vec()))
        .map_err(Error::HttpError)?;
    let _ = client.send(post).await?.into_body().collect_bytes().await?;

    let boxed: Box<DynBody> = Box::new(
        Body::empty().map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { Box::new(e) }),
    );
    drop(boxed);
    Ok(())
}

fn errors(result: Result<ConfigMap, Error>) -> Option<ConfigMap> {
    match result {
        Ok(cm) => Some(cm),
        Err(Error::Api(status)) if status.is_not_found() => None,
        Err(Error::Api(status)) => {
            let _: u16 = status.code;
            let _: &str = &status.reason;
            let _: &str = &status.message;
            None
        }
        Err(Error::SerdeError(e)) => {
            let _ = e.line();
            None
        }
        Err(Error::Service(e)) => {
            let _ = e.to_string();
            None
        }
        Err(other) => {
            let _ = other.to_string();
            None
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = client().await?;
    core_methods(client.clone()).await?;
    subresources(client.clone()).await?;
    raw_send(&client).await?;
    let _ = errors(Api::<ConfigMap>::default_namespaced(client).get("x").await);
    Ok(())
}
