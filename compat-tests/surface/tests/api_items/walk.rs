//! The public items reachable from a facade crate's root, by the paths a user writes:
//! modules, re-exports (followed into the other documented crates), types with their public
//! fields, variants and inherent associated items, and traits with their items.

use serde_json::Value;
use std::collections::{BTreeSet, HashMap, HashSet};

/// One public item: the path a user writes (starting with `kube::`) and its kind
/// (`struct`, `method`, `trait_fn`, `variant`, …).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Item {
    pub path: String,
    pub kind: String,
}

/// Walks rustdoc JSON documents. `crates` maps crate names to their documents; items of
/// other crates (k8s-openapi, kube-derive, std, …) are listed where re-exported, not
/// descended into.
pub struct Walker<'a> {
    crates: &'a HashMap<String, Value>,
    items: BTreeSet<Item>,
    /// (crate, item id, path) already expanded, against re-export cycles.
    expanded: HashSet<(String, String, String)>,
}

impl<'a> Walker<'a> {
    pub fn new(crates: &'a HashMap<String, Value>) -> Self {
        Self {
            crates,
            items: BTreeSet::new(),
            expanded: HashSet::new(),
        }
    }

    /// Every public item under crate `root`, named from `as_name` (`kube` for both facades).
    pub fn walk(mut self, root: &str, as_name: &str) -> BTreeSet<Item> {
        let doc = &self.crates[root];
        let root_id = id_key(&doc["root"]);
        self.module(root, &root_id, as_name);
        self.items
    }

    fn doc(&self, krate: &str) -> &'a Value {
        &self.crates[krate]
    }

    fn item(&self, krate: &str, id: &str) -> Option<&'a Value> {
        self.doc(krate)["index"].get(id)
    }

    fn add(&mut self, path: &str, kind: &str) {
        self.items.insert(Item {
            path: path.to_string(),
            kind: kind.to_string(),
        });
    }

    fn module(&mut self, krate: &str, id: &str, path: &str) {
        let Some(module) = self.item(krate, id) else {
            return;
        };
        let children = module["inner"]["module"]["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for child in children {
            let child = id_key(&child);
            let Some(item) = self.item(krate, &child) else {
                continue;
            };
            if item["visibility"] != "public" {
                continue;
            }
            if let Some(import) = item["inner"].get("use") {
                self.import(krate, import, path);
            } else if let Some(name) = item["name"].as_str() {
                self.named(krate, &child, &format!("{path}::{name}"));
            }
        }
    }

    /// A `pub use`: the item it names under its new name, or for a glob every public item
    /// of the module it names.
    fn import(&mut self, krate: &str, import: &Value, path: &str) {
        let name = import["name"].as_str().unwrap_or_default();
        let target = match import["id"].as_u64() {
            Some(id) => self.resolve(krate, &id.to_string()),
            None => Target::Unknown,
        };
        if import["is_glob"] == true {
            if let Target::Local(krate, id) = target {
                self.module(&krate, &id, path);
            }
            return;
        }
        if name == "_" {
            // `pub use Trait as _` (a prelude): the trait in scope without a name; its items
            // are listed at the trait's own path.
            let source = import["source"].as_str().unwrap_or_default();
            let last = source.rsplit("::").next().unwrap_or(source);
            self.add(&format!("{path}::{last} as _"), "use");
            return;
        }
        let path = format!("{path}::{name}");
        match target {
            Target::Local(krate, id) => self.named(&krate, &id, &path),
            Target::Foreign(kind) => self.add(&path, &kind),
            Target::Unknown => self.add(&path, "use"),
        }
    }

    /// The documented item an id of `krate` names, following it into another documented
    /// crate by path where it is defined there.
    fn resolve(&self, krate: &str, id: &str) -> Target {
        if self.item(krate, id).is_some() {
            return Target::Local(krate.to_string(), id.to_string());
        }
        let doc = self.doc(krate);
        let Some(summary) = doc["paths"].get(id) else {
            return Target::Unknown;
        };
        let kind = summary["kind"].as_str().unwrap_or("use").to_string();
        let crate_id = summary["crate_id"].to_string();
        let Some(owner) = doc["external_crates"][&crate_id]["name"].as_str() else {
            return Target::Foreign(kind);
        };
        let segments: Vec<&str> = summary["path"]
            .as_array()
            .map(|p| p.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match self
            .crates
            .get(owner)
            .and_then(|_| self.by_path(owner, &segments))
        {
            Some(id) => Target::Local(owner.to_string(), id),
            None => Target::Foreign(kind),
        }
    }

    /// The id of the item at `segments` (starting with the crate name) in crate `krate`.
    fn by_path(&self, krate: &str, segments: &[&str]) -> Option<String> {
        let doc = self.doc(krate);
        if segments.len() == 1 {
            return Some(id_key(&doc["root"]));
        }
        doc["paths"].as_object()?.iter().find_map(|(id, summary)| {
            let matches = summary["crate_id"] == 0
                && summary["path"].as_array().is_some_and(|p| {
                    p.iter()
                        .map(Value::as_str)
                        .eq(segments.iter().map(|s| Some(*s)))
                });
            (matches && self.item(krate, id).is_some()).then(|| id.clone())
        })
    }

    /// A named item at `path`, with its members.
    fn named(&mut self, krate: &str, id: &str, path: &str) {
        let Some(item) = self.item(krate, id) else {
            return;
        };
        let Some((kind, inner)) = item["inner"].as_object().and_then(|o| o.iter().next()) else {
            return;
        };
        let key = (krate.to_string(), id.to_string(), path.to_string());
        if !self.expanded.insert(key) {
            return;
        }
        let kind = match kind.as_str() {
            "module" => "mod",
            "function" => "fn",
            "type_alias" => "type",
            "proc_macro" => "proc_macro",
            other => other,
        };
        self.add(path, kind);
        match kind {
            "mod" => self.module(krate, id, path),
            "struct" => {
                for field in inner["kind"]["plain"]["fields"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    self.member(krate, &id_key(field), path, "field", true);
                }
                self.inherent_impls(krate, &inner["impls"], path);
            }
            "enum" => {
                for variant in inner["variants"].as_array().into_iter().flatten() {
                    self.member(krate, &id_key(variant), path, "variant", false);
                }
                self.inherent_impls(krate, &inner["impls"], path);
            }
            "union" => self.inherent_impls(krate, &inner["impls"], path),
            "trait" => {
                for member in inner["items"].as_array().into_iter().flatten() {
                    self.member(krate, &id_key(member), path, "trait", false);
                }
            }
            _ => {}
        }
    }

    /// The public items of the inherent (non-trait) impls among `impls`.
    fn inherent_impls(&mut self, krate: &str, impls: &Value, path: &str) {
        for impl_id in impls.as_array().into_iter().flatten() {
            let Some(imp) = self.item(krate, &id_key(impl_id)) else {
                continue;
            };
            let imp = &imp["inner"]["impl"];
            if !imp["trait"].is_null()
                || imp["is_synthetic"] == true
                || !imp["blanket_impl"].is_null()
            {
                continue;
            }
            for member in imp["items"].as_array().into_iter().flatten() {
                self.member(krate, &id_key(member), path, "inherent", true);
            }
        }
    }

    /// A field, variant, associated item or trait item of the item at `path`. `context`
    /// names what contains it: `field`, `variant`, `inherent` (an inherent impl) or `trait`.
    fn member(&mut self, krate: &str, id: &str, path: &str, context: &str, must_be_public: bool) {
        let Some(item) = self.item(krate, id) else {
            return;
        };
        if must_be_public && item["visibility"] != "public" {
            return;
        }
        let Some(name) = item["name"].as_str() else {
            return;
        };
        let Some(inner) = item["inner"].as_object().and_then(|o| o.keys().next()) else {
            return;
        };
        let kind = match (context, inner.as_str()) {
            ("field", _) => "field",
            ("variant", _) => "variant",
            ("inherent", "function") => "method",
            ("trait", "function") => "trait_fn",
            (_, "assoc_type") => "assoc_type",
            (_, "assoc_const") => "assoc_const",
            (_, other) => other,
        };
        self.add(&format!("{path}::{name}"), kind);
    }
}

enum Target {
    /// An item of a documented crate: (crate name, id).
    Local(String, String),
    /// An item of a crate that is not documented here, with rustdoc's kind for it.
    Foreign(String),
    /// An id rustdoc gives no path for.
    Unknown,
}

fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
