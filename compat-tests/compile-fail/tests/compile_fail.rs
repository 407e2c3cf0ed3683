//! kube 5.0 items that cannot work in a kube-wasm guest fail to compile with a message that
//! says why and what to use instead; each case's full compiler output is pinned in its
//! `.stderr` file (`TRYBUILD=overwrite` rewrites them after a deliberate change).

#[test]
fn guest_only_items_fail_with_a_clear_error() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
