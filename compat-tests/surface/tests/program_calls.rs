//! Every supported method of `kube::Api` and of `kube::runtime::WatchStreamExt` in the item
//! list is called by one of the programs in `src/bin/`, so that the programs (built for
//! wasm32-wasip1 against kube-wasm, natively against kube 5.0) exercise each of them with
//! kube 5.0's signatures — and a method added to the list cannot go uncalled.
//!
//! A call is the method's name right after `.` or `::` and right before `(`, in a program's
//! source. Methods whose status is `gap` or `not-applicable` are not required (a program
//! cannot call what kube-wasm lacks); once flipped to `supported`, they are.

use std::collections::BTreeSet;
use std::path::Path;

/// The types whose every supported method must be called, as item-list path prefixes.
const COVERED: &[&str] = &["kube::Api::", "kube::runtime::WatchStreamExt::"];

#[test]
fn programs_call_every_supported_api_and_watch_stream_ext_method() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let list = std::fs::read_to_string(dir.join("kube-5.0-items.tsv")).unwrap();
    let required: BTreeSet<(&str, &str)> = list
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| {
            let mut columns = line.split('\t');
            let (path, kind, status) = (columns.next()?, columns.next()?, columns.next()?);
            let prefix = COVERED.iter().find(|p| path.starts_with(**p))?;
            let name = &path[prefix.len()..];
            let is_method = matches!(kind, "method" | "trait_fn") && !name.contains("::");
            (is_method && status == "supported").then_some((*prefix, name))
        })
        .collect();
    assert!(
        required.len() > 50,
        "the item list should hold kube 5.0's Api and WatchStreamExt methods; found {}",
        required.len()
    );

    let mut sources = String::new();
    for entry in std::fs::read_dir(dir.join("src/bin")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            sources += &std::fs::read_to_string(&path).unwrap();
        }
    }
    let uncalled: Vec<String> = required
        .iter()
        .filter(|(_, name)| {
            !sources.contains(&format!(".{name}(")) && !sources.contains(&format!("::{name}("))
        })
        .map(|(prefix, name)| format!("{prefix}{name}"))
        .collect();
    assert!(
        uncalled.is_empty(),
        "no program in compat-tests/surface/src/bin calls these supported methods (add a call \
         with kube 5.0's signature):\n  {}",
        uncalled.join("\n  ")
    );
}
