//! The checked-in list of kube 5.0's features and public items (`kube-5.0-items.tsv`) stays
//! true: it names every feature kube 5.0's Cargo.toml declares and every public item of kube
//! 5.0 with all of them on, and nothing else; every feature is accepted by kube-wasm's
//! Cargo.toml, and is `supported` (kube-wasm's feature provides something) or
//! `not-applicable` (a no-op there) with a reason; every item marked `supported` exists in
//! kube-wasm at the same path with the same kind, and every item kube-wasm lacks is marked
//! `not-applicable` or `gap` with a reason.
//!
//! Both item lists are generated from rustdoc's JSON output of the crates themselves; the
//! features are read from kube 5.0's and kube-wasm's manifests.

mod api_items {
    pub mod features;
    pub mod list;
    pub mod rustdoc;
    pub mod walk;
}

use api_items::{features, list, rustdoc::Docs, walk::Walker};
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
    let kube_features = features::declared(&Docs::manifest_of(&crates["kube"]));
    let kube_features = features::named(&kube_features);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let wasm_features = features::declared(&dir.join("../../kube-wasm/Cargo.toml"));
    let surface_features = features::declared(&dir.join("Cargo.toml"));

    let file = dir.join(LIST);
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let listed = list::parse(&text).unwrap_or_else(|e| panic!("{LIST}: {e}"));
    if std::env::var_os("KUBE_SURFACE_BLESS").is_some() {
        let blessed = list::bless(&listed, &kube, &wasm, &kube_features);
        std::fs::write(&file, list::render(&blessed))
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
        return;
    }
    let mut problems =
        features::problems(&listed, &kube_features, &wasm_features, &surface_features);
    problems.extend(list::problems(&listed, &kube, &wasm));
    assert!(
        problems.is_empty(),
        "{LIST} is out of date ({} problems; KUBE_SURFACE_BLESS=1 regenerates it, keeping \
         statuses and reasons, then give every new gap a reason):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// The feature check fails for each way kube 5.0's features can outgrow the list: a feature
/// missing from the list, one kube-wasm does not accept, one marked supported that kube-wasm
/// only accepts as a no-op, and a not-applicable one without a reason.
#[test]
fn feature_check_names_each_missing_or_wrong_feature() {
    use api_items::list::{Entry, FEATURE, Status};
    use api_items::rustdoc::{EVERY_KUBE_FEATURE, KUBE_FEATURES};
    use api_items::walk::Item;
    use std::collections::{BTreeMap, BTreeSet};

    let feature = |name: &str| Item {
        path: name.to_string(),
        kind: FEATURE.to_string(),
    };
    let entry = |status, reason: &str| Entry {
        status,
        reason: reason.to_string(),
    };
    let kube: BTreeSet<String> = KUBE_FEATURES.iter().map(|f| f.to_string()).collect();
    let mut wasm: BTreeMap<String, Vec<String>> = kube
        .iter()
        .map(|f| (f.clone(), vec!["client".to_string()]))
        .collect();
    wasm.insert("client".into(), vec!["dep:kube-wasm-client".into()]);
    let surface = BTreeMap::from([(
        EVERY_KUBE_FEATURE.to_string(),
        KUBE_FEATURES.iter().map(|f| format!("kube/{f}")).collect(),
    )]);
    let mut listed: BTreeMap<Item, Entry> = kube
        .iter()
        .map(|f| (feature(f), entry(Status::NotApplicable, "a reason")))
        .collect();
    listed.insert(feature("client"), entry(Status::Supported, ""));
    assert_eq!(
        features::problems(&listed, &kube, &wasm, &surface),
        Vec::<String>::new(),
        "a complete, consistent list has no problems"
    );

    listed.remove(&feature("gzip"));
    wasm.remove("oidc");
    listed.insert(feature("ws"), entry(Status::Supported, ""));
    listed.insert(feature("oauth"), entry(Status::NotApplicable, " "));
    let problems = features::problems(&listed, &kube, &wasm, &surface);
    let expected = [
        "not in the list: feature gzip of kube 5.0",
        "kube-wasm's Cargo.toml does not declare feature oidc",
        "feature ws is marked supported, but kube-wasm's only enables other features",
        "feature oauth is not-applicable without a reason",
    ];
    for wanted in expected {
        assert!(
            problems.iter().any(|p| p.starts_with(wanted)),
            "expected a problem starting {wanted:?} in {problems:#?}"
        );
    }
    assert_eq!(problems.len(), expected.len(), "{problems:#?}");
}
