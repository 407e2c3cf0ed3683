//! The kube-wasm book's Rust code blocks, as doc tests: every page of `src/` with a `rust`
//! code block is included below, so `cargo test` compiles each block and runs those that can
//! run (the test command's unit-test step runs them). A block marks what it cannot do:
//! `no_run` (it needs a cluster), `compile_fail` (it shows what a guest cannot build),
//! `ignore` (a fragment). Build the book itself with `scripts/book.sh build`.

macro_rules! pages {
    ($($module:ident: $page:literal),* $(,)?) => {
        $(
            #[cfg(doctest)]
            #[doc = include_str!(concat!("src/", $page))]
            mod $module {}
        )*

        /// The pages included above, for the test that none is forgotten.
        #[cfg(test)]
        const PAGES: &[&str] = &[$($page),*];
    };
}

pages! {
    porting_rust: "porting/rust.md",
    porting_limits: "porting/limits.md",
    architecture_abi: "architecture/kube-wasm-abi.md",
    architecture_data_path: "architecture/data-path.md",
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn pages_with_rust(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("a folder of the book") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                pages_with_rust(&path, found);
            } else if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&path).expect("a page");
                if text
                    .lines()
                    .any(|line| line.trim_start().starts_with("```rust"))
                {
                    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
                    let page = path.strip_prefix(&src).expect("under src");
                    found.push(page.to_string_lossy().into_owned());
                }
            }
        }
    }

    #[test]
    fn every_page_with_rust_code_is_tested() {
        let mut found = Vec::new();
        pages_with_rust(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut found,
        );
        found.sort();
        let mut included: Vec<String> = super::PAGES.iter().map(|p| p.to_string()).collect();
        included.sort();
        assert_eq!(
            found, included,
            "every page of docs/src with a ```rust block is included in docs/lib.rs"
        );
    }
}
