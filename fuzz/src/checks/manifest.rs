//! The host manifest (`fleet::manifest`), parsed from any text: `Manifest::parse` never
//! panics, and a manifest it accepts holds what validation promises — at least one module,
//! unique DNS-label names, memory caps within one wasm page ..= 4 GiB, non-zero durations, no
//! `KUBE_WASM_*` variable set by the manifest.
//!
//! `wasm: Cargo.toml` names a file that exists (the crate's own manifest, beside `base`); an
//! accepted `image` is an image reference.

use std::collections::HashSet;
use std::path::Path;

use host_shim::fleet::manifest::{MAX_MEMORY_LIMIT, MIN_MEMORY_LIMIT, Manifest};
use host_shim::runtime::options::ModuleSource;
use kube_wasm_abi::env::ENV_PREFIX;

/// Checks `data` as a manifest.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(manifest) = Manifest::parse(text, base, Path::new("fuzz.yaml")) else {
        return;
    };
    assert!(!manifest.modules.is_empty());
    let mut names = HashSet::new();
    for module in &manifest.modules {
        assert!(names.insert(&module.name), "{} twice", module.name);
        let label = !module.name.is_empty()
            && module.name.len() <= 63
            && module
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        assert!(label, "module name {:?}", module.name);
        match &module.source {
            ModuleSource::File(wasm) => assert!(wasm.is_file()),
            ModuleSource::Image(image) => assert!(image.parse::<oci_client::Reference>().is_ok()),
        }
        let memory = module.options.memory_limit.expect("always set") as u64;
        assert!((MIN_MEMORY_LIMIT..=MAX_MEMORY_LIMIT).contains(&memory));
        for (key, _) in &module.options.env {
            assert!(
                !key.starts_with(ENV_PREFIX) && !key.is_empty(),
                "env {key:?}"
            );
        }
    }
    for duration in [
        manifest.request_timeout,
        manifest.entry_deadline,
        manifest.stop_timeout,
    ]
    .into_iter()
    .flatten()
    {
        assert!(!duration.is_zero());
    }
}
