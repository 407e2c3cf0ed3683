//! `#[derive(CustomResource)]` and `#[derive(Resource)]`, as kube-derive 5.0 code.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    shortname = "wd",
    printcolumn = r#"{"name":"Size","type":"integer","jsonPath":".spec.size"}"#
)]
struct WidgetSpec {
    size: u32,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
struct WidgetStatus {
    ready: bool,
}

#[derive(Resource, Serialize, Deserialize, Clone, Debug)]
#[resource(inherit = ConfigMap)]
struct TypedConfigMap {
    metadata: kube::api::ObjectMeta,
    data: Option<std::collections::BTreeMap<String, String>>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let crd = Widget::crd();
    let _ = serde_json::to_string(&crd)?;
    let _ = (
        Widget::crd_name(),
        Widget::api_resource(),
        Widget::shortnames(),
    );
    let _ = (Widget::kind(&()), Widget::group(&()), Widget::version(&()));
    let widget = Widget::new("w", WidgetSpec { size: 1 });
    let _ = (widget.name_any(), widget.status.clone());
    let client = Client::try_default().await?;
    let widgets: Api<Widget> = Api::default_namespaced(client.clone());
    let _ = widgets.get_opt("w").await?;
    let typed: Api<TypedConfigMap> = Api::default_namespaced(client);
    let _ = typed.get_opt("c").await?;
    Ok(())
}
