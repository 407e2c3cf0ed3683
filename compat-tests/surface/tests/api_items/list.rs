//! The checked-in list `kube-5.0-items.tsv`: one line per public item of kube 5.0,
//! `path<TAB>kind<TAB>status<TAB>reason`, and one per Cargo feature of kube 5.0,
//! `name<TAB>feature<TAB>status<TAB>reason` (checked by `features`), and its comparison with
//! the generated lists.

use super::walk::Item;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Whether kube-wasm provides an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// kube-wasm has the item at the same path, of the same kind.
    Supported,
    /// The item cannot work in a wasm guest (the reason says why and what to use instead);
    /// kube-wasm may still have it, as a stub whose use is a clear compile-time error.
    NotApplicable,
    /// kube-wasm lacks an item it could have.
    Gap,
}

impl Status {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "supported" => Some(Self::Supported),
            "not-applicable" => Some(Self::NotApplicable),
            "gap" => Some(Self::Gap),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Supported => "supported",
            Self::NotApplicable => "not-applicable",
            Self::Gap => "gap",
        }
    }
}

/// The kind column of a feature's line.
pub const FEATURE: &str = "feature";

/// One line's verdict.
#[derive(Debug, Clone)]
pub struct Entry {
    pub status: Status,
    pub reason: String,
}

const HEADER: &str = "\
# kube 5.0's Cargo features and public items (crate `kube` with every feature its Cargo.toml
# declares; re-exports of kube-client, kube-runtime and kube-core followed), and whether
# kube-wasm provides each. A feature's line reads `name feature status reason`: supported (kube-wasm
# provides its items) or not-applicable (kube-wasm accepts the name as a no-op, so a user's
# Cargo.toml compiles unchanged, and the reason says why a guest has no use for it).
# Columns: path, kind, status (supported / not-applicable / gap), reason.
# Checked by `cargo test -p kube-surface --test api_items`; regenerate with
# KUBE_SURFACE_BLESS=1 (keeps statuses and reasons, adds new items as supported or gap).
";

/// Parses the file; `Err` names the malformed line.
pub fn parse(text: &str) -> Result<BTreeMap<Item, Entry>, String> {
    let mut entries = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.splitn(4, '\t').collect();
        let [path, kind, status, rest @ ..] = fields.as_slice() else {
            return Err(format!(
                "line {}: expected path, kind, status: {line:?}",
                number + 1
            ));
        };
        let status = Status::parse(status)
            .ok_or_else(|| format!("line {}: unknown status {status:?}", number + 1))?;
        let item = Item {
            path: path.to_string(),
            kind: kind.to_string(),
        };
        let reason = rest.first().unwrap_or(&"").to_string();
        if entries.insert(item, Entry { status, reason }).is_some() {
            return Err(format!("line {}: {path} ({kind}) listed twice", number + 1));
        }
    }
    Ok(entries)
}

/// The file's text for `entries`. Features come first, then items, each sorted.
pub fn render(entries: &BTreeMap<Item, Entry>) -> String {
    let mut text = HEADER.to_string();
    let (features, items): (Vec<_>, Vec<_>) =
        entries.iter().partition(|(item, _)| item.kind == FEATURE);
    for (item, entry) in features.into_iter().chain(items) {
        let _ = writeln!(
            text,
            "{}\t{}\t{}\t{}",
            item.path,
            item.kind,
            entry.status.as_str(),
            entry.reason
        );
    }
    text
}

/// Every way the checked-in list disagrees with kube 5.0 (`kube`) and kube-wasm (`wasm`),
/// one readable line each.
pub fn problems(
    listed: &BTreeMap<Item, Entry>,
    kube: &BTreeSet<Item>,
    wasm: &BTreeSet<Item>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let listed = listed.iter().filter(|(item, _)| item.kind != FEATURE);
    let listed: BTreeMap<&Item, &Entry> = listed.collect();
    for item in kube.iter().filter(|item| !listed.contains_key(item)) {
        problems.push(format!(
            "not in the list: {} ({}) is public in kube 5.0",
            item.path, item.kind
        ));
    }
    for (item, entry) in listed {
        let (path, kind) = (&item.path, &item.kind);
        if !kube.contains(item) {
            problems.push(format!("listed, but kube 5.0 has no {path} ({kind})"));
            continue;
        }
        match entry.status {
            Status::Supported if !wasm.contains(item) => problems.push(format!(
                "marked supported, but kube-wasm has no {path} ({kind})"
            )),
            Status::Gap if wasm.contains(item) => problems.push(format!(
                "marked gap, but kube-wasm now has {path} ({kind}): mark it supported"
            )),
            Status::Gap | Status::NotApplicable if entry.reason.trim().is_empty() => {
                problems.push(format!(
                    "{path} ({kind}) is {} without a reason",
                    entry.status.as_str()
                ))
            }
            _ => {}
        }
    }
    problems
}

/// `listed` brought up to date: kube 5.0's items and features (`features`) only, statuses
/// kept where still true, new or contradicted items marked by what kube-wasm has, new
/// features marked gap (a new gap gets an empty reason, which the check then asks for).
pub fn bless(
    listed: &BTreeMap<Item, Entry>,
    kube: &BTreeSet<Item>,
    wasm: &BTreeSet<Item>,
    features: &BTreeSet<String>,
) -> BTreeMap<Item, Entry> {
    let features = features.iter().map(|name| {
        let item = Item {
            path: name.clone(),
            kind: FEATURE.to_string(),
        };
        let entry = listed.get(&item).cloned().unwrap_or(Entry {
            status: Status::Gap,
            reason: String::new(),
        });
        (item, entry)
    });
    let items = kube.iter().map(|item| {
        let present = wasm.contains(item);
        let entry = match listed.get(item) {
            Some(entry) if entry.status == Status::NotApplicable => entry.clone(),
            Some(entry) if (entry.status == Status::Supported) == present => entry.clone(),
            _ if present => Entry {
                status: Status::Supported,
                reason: String::new(),
            },
            _ => Entry {
                status: Status::Gap,
                reason: String::new(),
            },
        };
        (item.clone(), entry)
    });
    features.chain(items).collect()
}
