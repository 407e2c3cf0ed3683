//! Writes `$OUT_DIR/controllers.rs`: every controller of the mixed fleet as a module of this
//! process (see `src/rewrite.rs`), and the table of their entry points.

#[path = "src/rewrite.rs"]
mod rewrite;

use std::path::Path;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo::rerun-if-changed=src/rewrite.rs");
    let mut generated = String::new();
    for (kind, path) in rewrite::KINDS {
        let path = Path::new(&manifest_dir).join(path);
        println!("cargo::rerun-if-changed={}", path.display());
        let source = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let module = rewrite::rewrite(kind, &source).unwrap_or_else(|e| panic!("{e}"));
        generated.push_str(&module);
    }
    generated.push_str(&rewrite::entry_table());
    let out = Path::new(&out_dir).join("controllers.rs");
    std::fs::write(&out, generated).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
