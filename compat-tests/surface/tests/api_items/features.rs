//! kube 5.0's Cargo features in the checked-in list: one line per feature kube 5.0's
//! Cargo.toml declares, `name<TAB>feature<TAB>status<TAB>reason`, held to kube 5.0's manifest,
//! to kube-wasm's (which must accept every name, so a user's feature list compiles unchanged)
//! and to the features the item list is generated with (every one).

use super::list::{Entry, FEATURE, Status};
use super::rustdoc::{EVERY_KUBE_FEATURE, KUBE_FEATURES};
use super::walk::Item;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The `[features]` table of the manifest at `path`: each feature with what it enables.
pub fn declared(path: &Path) -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let manifest: toml::Table =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let Some(features) = manifest.get("features").and_then(toml::Value::as_table) else {
        return BTreeMap::new();
    };
    features
        .iter()
        .map(|(name, enables)| {
            let enables = enables
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(toml::Value::as_str)
                .map(str::to_string)
                .collect();
            (name.clone(), enables)
        })
        .collect()
}

/// The features a user names: all but `default`.
pub fn named(features: &BTreeMap<String, Vec<String>>) -> BTreeSet<String> {
    features
        .keys()
        .filter(|name| *name != "default")
        .cloned()
        .collect()
}

/// Every way the list's feature lines, kube-wasm's `[features]` (`wasm`) and the features
/// the item list is generated with (`surface`: this crate's `[features]`) disagree with the
/// features kube 5.0 declares (`kube`), one readable line each.
pub fn problems(
    listed: &BTreeMap<Item, Entry>,
    kube: &BTreeSet<String>,
    wasm: &BTreeMap<String, Vec<String>>,
    surface: &BTreeMap<String, Vec<String>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let listed: BTreeMap<&str, &Entry> = listed
        .iter()
        .filter(|(item, _)| item.kind == FEATURE)
        .map(|(item, entry)| (item.path.as_str(), entry))
        .collect();
    for feature in kube {
        if !listed.contains_key(feature.as_str()) {
            problems.push(format!(
                "not in the list: feature {feature} of kube 5.0 (add a line \
                 `{feature}\\t{FEATURE}\\tsupported|not-applicable|gap\\treason`)"
            ));
        }
        if !wasm.contains_key(feature) {
            problems.push(format!(
                "kube-wasm's Cargo.toml does not declare feature {feature} of kube 5.0, so a \
                 kube 5.0 user's feature list does not compile against it"
            ));
        }
        if !KUBE_FEATURES.contains(&feature.as_str()) {
            problems.push(format!(
                "the item list is not generated with feature {feature} of kube 5.0: add it to \
                 rustdoc::KUBE_FEATURES"
            ));
        }
    }
    for feature in KUBE_FEATURES.iter().filter(|f| !kube.contains(**f)) {
        problems.push(format!(
            "rustdoc::KUBE_FEATURES names {feature}, which kube 5.0 does not declare"
        ));
    }
    let wanted: BTreeSet<String> = KUBE_FEATURES.iter().map(|f| format!("kube/{f}")).collect();
    let every: BTreeSet<String> = surface
        .get(EVERY_KUBE_FEATURE)
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    if every != wanted {
        problems.push(format!(
            "kube-surface's feature {EVERY_KUBE_FEATURE} must enable exactly \
             kube/<each of rustdoc::KUBE_FEATURES>; it misses {:?} and has extra {:?}",
            wanted.difference(&every).collect::<Vec<_>>(),
            every.difference(&wanted).collect::<Vec<_>>()
        ));
    }
    for (feature, entry) in listed {
        if !kube.contains(feature) {
            problems.push(format!("listed, but kube 5.0 has no feature {feature}"));
            continue;
        }
        let enables = wasm.get(feature).map(Vec::as_slice).unwrap_or_default();
        let is_no_op = enables.iter().all(|f| kube.contains(f));
        match entry.status {
            Status::Supported if is_no_op => problems.push(format!(
                "feature {feature} is marked supported, but kube-wasm's only enables other \
                 features ({enables:?}): it provides nothing of its own"
            )),
            Status::NotApplicable if !is_no_op => problems.push(format!(
                "feature {feature} is marked not-applicable, but kube-wasm's enables \
                 {enables:?}: mark it supported"
            )),
            Status::Gap | Status::NotApplicable if entry.reason.trim().is_empty() => {
                problems.push(format!(
                    "feature {feature} is {} without a reason",
                    entry.status.as_str()
                ))
            }
            _ => {}
        }
    }
    problems
}
