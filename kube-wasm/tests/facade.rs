//! The facade used exactly as a controller uses kube 5.0: renamed to `kube`, with
//! `#[derive(CustomResource)]`, against the fake host.

// A controller's Cargo.toml renames the package to `kube`; this does the same, so the paths
// kube-derive generates (`::kube::core::…`) resolve as they do for users.
extern crate kube_wasm as kube;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::entry::{CommitError, Entry};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, EvictParams, GetParams, GroupVersionKind,
    ListMeta, ListParams, LogParams, NotUsed, Object, ObjectList, ObjectMeta, PartialObjectMeta,
    PartialObjectMetaExt, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
    ResourceExt, TypeMeta, ValidationDirective, VersionMatch, WatchEvent, WatchParams,
};
use kube::api::{Evict, GroupVersionResource, Log, Request, ScaleSpec, ScaleStatus};
use kube::config::KubeConfigOptions;
use kube::{Client, Config, CustomResource, CustomResourceExt, Error, Resource, Result};
use kube_wasm_abi::{Completion, WatchRequest};
use kube_wasm_guest::fake::{FakeHost, Submitted};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A custom resource as a controller author writes it.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.dev", version = "v1", kind = "Widget", namespaced)]
#[kube(status = "WidgetStatus", shortname = "wg")]
#[kube(scale(
    spec_replicas_path = ".spec.replicas",
    status_replicas_path = ".status.replicas"
))]
pub struct WidgetSpec {
    replicas: i32,
    colour: String,
}

/// Its status.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct WidgetStatus {
    replicas: i32,
}

#[test]
fn derive_generates_resource_and_crd() {
    assert_eq!(Widget::kind(&()), "Widget");
    assert_eq!(Widget::group(&()), "example.dev");
    assert_eq!(Widget::api_version(&()), "example.dev/v1");
    assert_eq!(
        Widget::url_path(&(), Some("ns")),
        "/apis/example.dev/v1/namespaces/ns/widgets"
    );
    let crd = Widget::crd();
    assert_eq!(crd.metadata.name.as_deref(), Some("widgets.example.dev"));
    assert_eq!(crd.spec.names.short_names, Some(vec!["wg".to_string()]));
    assert_eq!(Widget::crd_name(), "widgets.example.dev");
    let w = Widget::new(
        "w1",
        WidgetSpec {
            replicas: 2,
            colour: "red".into(),
        },
    );
    assert_eq!(w.name_any(), "w1");
    let meta: PartialObjectMeta<Widget> = ObjectMeta::default().into_request_partial();
    assert_eq!(meta.types.as_ref().map(|t| t.kind.as_str()), Some("Widget"));
}

#[test]
fn a_derived_resource_goes_through_the_host() {
    let host = FakeHost::install();
    let client = Client::for_host("apps");
    let widgets: Api<Widget> = Api::default_namespaced(client);
    let mut task = host.spawn(async move {
        let applied = widgets
            .patch(
                "w1",
                &PatchParams::apply("widget-controller"),
                &Patch::Apply(Widget::new(
                    "w1",
                    WidgetSpec {
                        replicas: 3,
                        colour: "blue".into(),
                    },
                )),
            )
            .await?;
        let status = widgets
            .patch_status(
                "w1",
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"status": {"replicas": 3}})),
            )
            .await?;
        Ok::<_, Error>((applied.spec.replicas, status.status.map(|s| s.replicas)))
    });
    let body = serde_json::json!({
        "apiVersion": "example.dev/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "apps"},
        "spec": {"replicas": 3, "colour": "blue"}, "status": {"replicas": 3},
    })
    .to_string();
    let mut uris = Vec::new();
    for _ in 0..2 {
        host.run_until_stalled();
        for op in host.take_submitted() {
            let Submitted::Http { id, request, .. } = op else {
                panic!("http expected")
            };
            uris.push(request.uri);
            host.complete(
                id,
                &Completion::Response {
                    status: 200,
                    headers: vec![],
                },
                body.as_bytes(),
            );
        }
    }
    assert_eq!(
        uris,
        [
            "/apis/example.dev/v1/namespaces/apps/widgets/w1?&fieldManager=widget-controller",
            "/apis/example.dev/v1/namespaces/apps/widgets/w1/status?",
        ]
    );
    assert_eq!(
        task.output().map(|r| r.expect("both succeed")),
        Some((3, Some(3)))
    );
}

#[test]
fn watch_through_the_facade() {
    let host = FakeHost::install();
    let api: Api<ConfigMap> = Api::all(Client::for_host("default"));
    let mut task = host.spawn(async move {
        let mut stream = api.watch(&WatchParams::default(), "0").await?.boxed();
        let mut names = Vec::new();
        while let Some(event) = stream.next().await {
            if let WatchEvent::Added(cm) = event? {
                names.push(cm.name_any());
            }
        }
        Ok::<_, Error>(names)
    });
    host.run_until_stalled();
    let Some(Submitted::Watch {
        id,
        request: WatchRequest { path, .. },
    }) = host.take_submitted().pop()
    else {
        panic!("a watch op");
    };
    assert_eq!(path, "/api/v1/configmaps");
    let added = br#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}}"#;
    let established = Completion::Head {
        status: 200,
        headers: vec![],
    };
    host.complete(id, &established, b"");
    host.complete(id, &Completion::WatchEvent {}, added);
    host.complete(id, &Completion::End {}, b"");
    assert_eq!(
        task.output().map(|r| r.expect("ok")),
        Some(vec!["c1".to_string()])
    );
}

/// Every re-exported name is usable at the path kube 5.0 has it (a compile-time check).
#[allow(dead_code, clippy::type_complexity)]
fn kube_paths_exist(
    _: (
        ListParams,
        WatchParams,
        PostParams,
        DeleteParams,
        GetParams,
        EvictParams,
        LogParams,
    ),
    _: (
        Option<Preconditions>,
        Option<PropagationPolicy>,
        Option<ValidationDirective>,
        Option<VersionMatch>,
    ),
    _: (
        ObjectList<ConfigMap>,
        ListMeta,
        TypeMeta,
        DynamicObject,
        ApiResource,
        GroupVersionKind,
    ),
    _: (
        Object<NotUsed, NotUsed>,
        Option<Entry<'static, ConfigMap>>,
        Option<CommitError>,
    ),
    _: (
        Result<()>,
        Option<Config>,
        KubeConfigOptions,
        kube::error::DiscoveryError,
    ),
    _: (
        kube::core::Status,
        kube::error::Status,
        kube::client::APIGroupDiscoveryList,
    ),
) {
    fn takes_resource<K: Resource + ResourceExt>() {}
    fn takes_markers<K: Log + Evict>() {}
    takes_markers::<k8s_openapi::api::core::v1::Pod>();
    let _: Option<(GroupVersionResource, Request, ScaleSpec, ScaleStatus)> = None;
    fn takes_crd<K: CustomResourceExt>() {}
    takes_resource::<Widget>();
    takes_crd::<Widget>();
}

/// The prelude alone brings the extension traits, as kube's.
mod prelude {
    use kube::prelude::*;

    pub fn name_of(cm: &k8s_openapi::api::core::v1::ConfigMap) -> String {
        cm.name_any()
    }
}

#[test]
fn paths_compile() {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("n".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    assert_eq!(prelude::name_of(&cm), "n");
    let _ = kube_paths_exist;
    let _ = kube::Config::new("https://h".parse().expect("uri")).default_namespace;
}
