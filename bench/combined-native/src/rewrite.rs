//! How a controller's `main.rs` becomes a module of the combined process, the way its author
//! would combine it by hand: `main` is no longer the process's entry point but an `async fn`
//! the combined process runs as one task, and what the program took from its process (a
//! `Client` from the kubeconfig, environment variables, arguments) comes from its instance
//! ([`crate::instance`]) instead. Nothing else of the source changes.
//!
//! Shared by `build.rs` (which writes the modules) and the unit tests.

/// Every kind of the mixed fleet and its source, relative to this crate's directory: the five
/// examples, the ring controller and the parity scenario controllers that keep running.
pub const KINDS: [(&str, &str); 18] = [
    (
        "configmap-mirror",
        "../../examples/configmap-mirror/src/main.rs",
    ),
    (
        "configmap-generator",
        "../../examples/configmap-generator/src/main.rs",
    ),
    (
        "finalizer-controller",
        "../../examples/finalizer-controller/src/main.rs",
    ),
    ("store-reader", "../../examples/store-reader/src/main.rs"),
    ("multi-watch", "../../examples/multi-watch/src/main.rs"),
    ("ring-controller", "../ring-controller/src/main.rs"),
    (
        "parity-conflict",
        "../../compat-tests/parity/scenarios/src/bin/parity-conflict.rs",
    ),
    (
        "parity-create",
        "../../compat-tests/parity/scenarios/src/bin/parity-create.rs",
    ),
    (
        "parity-events",
        "../../compat-tests/parity/scenarios/src/bin/parity-events.rs",
    ),
    (
        "parity-finalizer",
        "../../compat-tests/parity/scenarios/src/bin/parity-finalizer.rs",
    ),
    (
        "parity-owners",
        "../../compat-tests/parity/scenarios/src/bin/parity-owners.rs",
    ),
    (
        "parity-paging",
        "../../compat-tests/parity/scenarios/src/bin/parity-paging.rs",
    ),
    (
        "parity-reflector",
        "../../compat-tests/parity/scenarios/src/bin/parity-reflector.rs",
    ),
    (
        "parity-requeue",
        "../../compat-tests/parity/scenarios/src/bin/parity-requeue.rs",
    ),
    (
        "parity-restart-controller",
        "../../compat-tests/parity/scenarios/src/bin/parity-restart-controller.rs",
    ),
    (
        "parity-restart-reflector",
        "../../compat-tests/parity/scenarios/src/bin/parity-restart-reflector.rs",
    ),
    (
        "parity-update-ssa",
        "../../compat-tests/parity/scenarios/src/bin/parity-update-ssa.rs",
    ),
    (
        "parity-wait",
        "../../compat-tests/parity/scenarios/src/bin/parity-wait.rs",
    ),
];

/// The entry point: `#[tokio::main]` builds a runtime per process; combined, `main` is a
/// future the one runtime runs. Must occur exactly once.
const ENTRY: (&str, &str) = ("#[tokio::main]\nasync fn main()", "pub async fn main()");

/// What a controller takes from its process, and what it takes instead. Each may occur any
/// number of times.
const FROM_PROCESS: [(&str, &str); 3] = [
    ("Client::try_default()", "crate::instance::client()"),
    ("std::env::var(", "crate::instance::var("),
    ("std::env::args()", "crate::instance::args()"),
];

/// The module name of `kind`: `configmap-mirror` → `configmap_mirror`.
pub fn module_name(kind: &str) -> String {
    kind.replace('-', "_")
}

/// `source` (a controller's `main.rs`) as the module `kind` of the combined process.
///
/// # Errors
/// If `source` has no `#[tokio::main] async fn main()`, or more than one, or never asks for
/// `Client::try_default()`: it is not a controller this rewrite knows how to combine.
pub fn rewrite(kind: &str, source: &str) -> Result<String, String> {
    let source = source.replace("\r\n", "\n");
    let (entry, pub_entry) = ENTRY;
    match source.matches(entry).count() {
        1 => {}
        n => return Err(format!("{kind}: {n} × `{entry}`, expected exactly one")),
    }
    if !source.contains(FROM_PROCESS[0].0) {
        return Err(format!("{kind}: no `{}`", FROM_PROCESS[0].0));
    }
    let mut body = source.replace(entry, pub_entry);
    for (from, to) in FROM_PROCESS {
        body = body.replace(from, to);
    }
    // Its imports of what the rewrite replaced (`Client`) may be left unused.
    Ok(format!(
        "#[allow(unused_imports)]\npub mod {} {{\n{body}\n}}\n",
        module_name(kind)
    ))
}

/// The table of entry points: `pub fn main_of(kind) -> Option<future>` over every kind.
pub fn entry_table() -> String {
    let mut table = String::from(
        "/// The `main` of `kind`'s controller as a task's future, or `None` for an unknown kind.\n\
         pub fn main_of(kind: &str) -> Option<futures::future::BoxFuture<'static, anyhow::Result<()>>> {\n    match kind {\n",
    );
    for (kind, _) in KINDS {
        table.push_str(&format!(
            "        {kind:?} => Some(Box::pin({}::main())),\n",
            module_name(kind)
        ));
    }
    table.push_str("        _ => None,\n    }\n}\n");
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTROLLER: &str = "//! Docs.\nuse kube::Client;\n\n#[tokio::main]\nasync fn main() -> anyhow::Result<()> {\n    let target = std::env::var(\"T\")?;\n    let client = Client::try_default().await?;\n    if std::env::args().nth(1).is_some() {}\n    Ok(())\n}\n";

    #[test]
    fn main_becomes_a_public_async_fn_taking_its_client_and_environment_from_its_instance() {
        let module = rewrite("ring-controller", CONTROLLER).expect("rewrites");
        assert!(
            module.starts_with("#[allow(unused_imports)]\npub mod ring_controller {\n//! Docs.")
        );
        assert!(module.contains("pub async fn main() -> anyhow::Result<()>"));
        assert!(!module.contains("tokio::main"));
        assert!(module.contains("crate::instance::client().await?"));
        assert!(module.contains("crate::instance::var(\"T\")?"));
        assert!(module.contains("crate::instance::args().nth(1)"));
        assert!(!module.contains("std::env"));
        assert!(module.ends_with("}\n\n}\n"));
    }

    #[test]
    fn a_source_without_exactly_one_tokio_main_or_without_a_default_client_is_refused() {
        let two = format!("{CONTROLLER}\n#[tokio::main]\nasync fn main() {{}}\n");
        assert!(rewrite("x", &two).unwrap_err().contains("2 ×"));
        let none = CONTROLLER.replace("#[tokio::main]\n", "");
        assert!(rewrite("x", &none).unwrap_err().contains("0 ×"));
        let no_client = CONTROLLER.replace("Client::try_default()", "make()");
        assert!(
            rewrite("x", &no_client)
                .unwrap_err()
                .contains("no `Client::try_default()`")
        );
    }

    #[test]
    fn windows_line_endings_are_rewritten_too() {
        let crlf = CONTROLLER.replace('\n', "\r\n");
        assert!(
            rewrite("x", &crlf)
                .expect("rewrites")
                .contains("pub async fn main()")
        );
    }

    #[test]
    fn every_kind_has_one_arm_in_the_entry_table() {
        let table = entry_table();
        for (kind, _) in KINDS {
            let arm = format!(
                "\"{kind}\" => Some(Box::pin({}::main())),",
                module_name(kind)
            );
            assert_eq!(table.matches(&arm).count(), 1, "{kind}");
        }
        assert!(table.contains("_ => None,"));
    }
}
