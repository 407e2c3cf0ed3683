//! The harness's own pieces, without a cluster: the allowlist, the audit projection of patch
//! bodies, and the difference table. (A test target rather than unit tests in the library, so
//! `scripts/test.sh` runs them within the workspace's feature resolution: no second kube build.)

use kube_wasm_parity::allowlist::Allowlist;
use kube_wasm_parity::audit::shape;
use kube_wasm_parity::report::{Difference, sequence_differences, table};
use serde_json::json;

/// A difference of scenario `s` that only the left run shows.
fn difference(aspect: &str, left: &str) -> Difference {
    Difference {
        scenario: "s".into(),
        aspect: aspect.into(),
        left: left.into(),
        right: "(none)".into(),
    }
}

#[test]
fn entries_allow_matching_rows_and_go_stale_otherwise() {
    let list = Allowlist::parse(
        r#"
        [[allow]]
        scenario = "s"
        aspect = "requests"
        pattern = "GET configmaps"
        reason = "known"

        [[allow]]
        scenario = "s"
        aspect = "state"
        pattern = "never"
        reason = "fixed long ago"
        "#,
    )
    .expect("parses");
    let (allowed, denied, stale) = list.apply(
        "s",
        vec![
            difference("requests step 1 reads #2", "GET configmaps a -> 200"),
            difference("observations step 1 #1", "GET configmaps"),
        ],
    );
    assert_eq!(allowed.len(), 1);
    assert_eq!(denied.len(), 1);
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0].pattern, "never");
}

#[test]
fn entries_need_a_known_aspect_and_a_reason() {
    let bad = "[[allow]]\nscenario = \"s\"\naspect = \"timing\"\npattern = \"x\"\nreason = \"r\"";
    assert!(Allowlist::parse(bad).is_err());
    let bad = "[[allow]]\nscenario = \"s\"\naspect = \"state\"\npattern = \"x\"\nreason = \" \"";
    assert!(Allowlist::parse(bad).is_err());
}

#[test]
fn shapes_name_keys_and_operations_but_no_values() {
    let patch = json!({ "metadata": { "annotations": { "a": "b" }, "name": "x" }, "status": 1 });
    assert_eq!(shape(&patch), "{metadata{annotations,name},status}");
    let ops = json!([{ "op": "test", "path": "/metadata/finalizers" }, { "op": "add", "path": "/metadata/finalizers/-" }]);
    assert_eq!(
        shape(&ops),
        "json-patch[test /metadata/finalizers, add /metadata/finalizers/-]"
    );
}

#[test]
fn sequences_differ_where_positions_differ() {
    let a = ["x".to_string(), "y".to_string()];
    let b = ["y".to_string(), "x".to_string(), "z".to_string()];
    let rows = sequence_differences("s", "requests", &a, &b);
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[2].left, "(none)");
    assert_eq!(rows[2].aspect, "requests #3");
}

#[test]
fn the_table_aligns_columns() {
    let rows = [Difference {
        scenario: "parity-create".into(),
        aspect: "state Widget/a .status".into(),
        left: "1".into(),
        right: "2".into(),
    }];
    let text = table("native", "wasm", &rows);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0].find("| aspect"), lines[2].find("| state"));
    assert_eq!(lines[0].find("| native"), lines[2].find("| 1"));
}
