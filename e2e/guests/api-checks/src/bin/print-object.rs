//! A plain `fn main()` — no `#[tokio::main]`, no task, no request — that prints an object
//! built with kube's types and returns, as kube's CRD-printing examples do. Natively it exits
//! 0 at once; in the host it must too.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Resource;
use kube::api::ObjectMeta;

fn main() {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("printed".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    println!(
        "{} {}",
        ConfigMap::kind(&()),
        ConfigMap::url_path(&(), Some("ns"))
    );
    match serde_json::to_string(&cm) {
        Ok(json) => println!("{json}"),
        Err(e) => eprintln!("cannot serialise: {e}"),
    }
}
