//! The checked-in list of kube 5.0's public items (`kube-5.0-items.tsv`) stays true: it
//! names every public item of kube 5.0 (for the features kube-wasm supports) and nothing
//! else, every item marked `supported` exists in kube-wasm at the same path with the same
//! kind, and every item kube-wasm lacks is marked `not-applicable` or `gap` with a reason.
//!
//! Both lists are generated from rustdoc's JSON output of the crates themselves.

mod api_items {
    pub mod list;
    pub mod rustdoc;
    pub mod walk;
}

use api_items::{list, rustdoc::Docs, walk::Walker};
use std::collections::HashMap;
use std::path::Path;

const LIST: &str = "kube-5.0-items.tsv";

#[test]
fn checked_in_item_list_matches_kube_and_kube_wasm() {
    let docs = Docs::generate();
    let crates: HashMap<String, serde_json::Value> = [
        "kube",
        "kube_client",
        "kube_runtime",
        "kube_core",
        "kube_wasm",
        "kube_wasm_client",
        "kube_runtime_wasm",
    ]
    .into_iter()
    .map(|name| (name.to_string(), docs.load(name)))
    .collect();
    let kube = Walker::new(&crates).walk("kube", "kube");
    let wasm = Walker::new(&crates).walk("kube_wasm", "kube");

    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(LIST);
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let listed = list::parse(&text).unwrap_or_else(|e| panic!("{LIST}: {e}"));
    if std::env::var_os("KUBE_SURFACE_BLESS").is_some() {
        let blessed = list::bless(&listed, &kube, &wasm);
        std::fs::write(&file, list::render(&blessed))
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
        return;
    }
    let problems = list::problems(&listed, &kube, &wasm);
    assert!(
        problems.is_empty(),
        "{LIST} is out of date ({} problems; KUBE_SURFACE_BLESS=1 regenerates it, keeping \
         statuses and reasons, then give every new gap a reason):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}
