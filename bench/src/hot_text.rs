//! Whether `host-shim/hot-text.order` is current: how many of the functions it lists the host
//! binary under test has, and in how many 64 KiB blocks of code they lie (the kernel maps a
//! released executable back a block at a time; `scripts/hot-text.sh` regenerates the list).

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use anyhow::Context as _;
use object::{Object as _, ObjectSymbol as _, SymbolKind};
use serde::{Deserialize, Serialize};

/// The size of a block the kernel maps back on a fault (its default `fault_around_bytes`).
const BLOCK_BYTES: u64 = 64 * 1024;

/// The order file against one host binary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HotText {
    /// Functions the order file lists.
    pub listed: usize,
    /// Of them, functions the binary has (by symbol name).
    pub found: usize,
    /// 64 KiB blocks of the binary's address space that the found functions touch.
    pub blocks: usize,
}

impl HotText {
    /// The share of listed functions the binary has, 0–1 (0 for an empty list).
    pub fn found_share(&self) -> f64 {
        if self.listed == 0 {
            0.0
        } else {
            self.found as f64 / self.listed as f64
        }
    }
}

/// Reads the order file (one symbol name per line) and the binary's symbol table.
///
/// # Errors
/// If either file cannot be read, or the binary is not an object file `object` parses.
pub fn check(binary: &Path, order: &Path) -> anyhow::Result<HotText> {
    let listed: HashSet<String> = std::fs::read_to_string(order)
        .with_context(|| format!("reading {}", order.display()))?
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    let data = std::fs::read(binary).with_context(|| format!("reading {}", binary.display()))?;
    let file =
        object::File::parse(&*data).with_context(|| format!("parsing {}", binary.display()))?;
    let mut found = HashSet::new();
    let mut blocks = BTreeSet::new();
    for symbol in file.symbols() {
        if symbol.kind() != SymbolKind::Text {
            continue;
        }
        let Ok(name) = symbol.name() else { continue };
        if !listed.contains(name) {
            continue;
        }
        found.insert(name);
        let start = symbol.address();
        let end = start + symbol.size().max(1);
        blocks.extend(start / BLOCK_BYTES..=(end - 1) / BLOCK_BYTES);
    }
    Ok(HotText {
        listed: listed.len(),
        found: found.len(),
        blocks: blocks.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[unsafe(no_mangle)]
    #[inline(never)]
    extern "C" fn kube_wasm_bench_hot_text_probe() -> u32 {
        std::hint::black_box(7)
    }

    #[test]
    fn counts_the_listed_functions_the_binary_has_and_their_blocks() {
        assert_eq!(kube_wasm_bench_hot_text_probe(), 7);
        let dir = std::env::temp_dir().join(format!("hot-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let order = dir.join("hot-text.order");
        std::fs::write(
            &order,
            "kube_wasm_bench_hot_text_probe\n\nkube_wasm_bench_no_such_function\n",
        )
        .unwrap();
        let exe = std::env::current_exe().unwrap();
        let h = check(&exe, &order).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!((h.listed, h.found, h.blocks), (2, 1, 1), "{h:?}");
        assert_eq!(h.found_share(), 0.5);
    }

    #[test]
    fn a_missing_order_file_is_an_error() {
        let exe = std::env::current_exe().unwrap();
        assert!(check(&exe, Path::new("/nonexistent/hot-text.order")).is_err());
    }
}
