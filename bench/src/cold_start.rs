//! Cold start of distinct modules (the compile-in-child lever): N ring controllers, each its
//! own module (the ring module with a custom section naming its instance, so every one has
//! its own digest and cache entry), in one host with an empty cache — compiled in the host's
//! process (`compileInChild: false`), then in a `host-shim compile` child (the default), in
//! one run. Each launch is timed from the host's start until a ring cycle has passed through
//! every controller (all compiled, watching and reconciling), then left to settle and its
//! idle memory sampled.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kube_wasm_e2e::manifest::Entry;
use serde::{Deserialize, Serialize};

use crate::cluster::{self, RING_NAME};
use crate::fleet::{Fleet, Setup, Variant, host_manifest, ring_entry};
use crate::memory::Sample;
use crate::workloads::Bench;

/// The custom section that makes each copy of the ring module distinct.
const INSTANCE_SECTION: &str = "kube-wasm-bench.instance";

/// One cold start of N distinct modules.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColdStartRun {
    /// Distinct modules, one controller each.
    pub modules: usize,
    /// Whether the host compiled them in a child process.
    pub compile_in_child: bool,
    /// From the host's start until the first ring cycle arrived at the end of the ring, in s.
    pub all_running_s: f64,
    /// Memory right then.
    pub started: Sample,
    /// Memory after the settle time (median of 3 samples 1 s apart).
    pub idle: Sample,
}

/// `wasm` with a custom section [`INSTANCE_SECTION`] holding `instance` appended: the same
/// code, a different digest.
pub fn distinct_copy(wasm: &[u8], instance: usize) -> Vec<u8> {
    fn leb128(mut value: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let payload = instance.to_string();
    let mut content = Vec::new();
    leb128(INSTANCE_SECTION.len(), &mut content);
    content.extend_from_slice(INSTANCE_SECTION.as_bytes());
    content.extend_from_slice(payload.as_bytes());
    let mut out = wasm.to_vec();
    out.push(0);
    leb128(content.len(), &mut out);
    out.extend_from_slice(&content);
    out
}

/// Writes `n` distinct copies of `wasm` into `dir` as `ring-<i>.wasm`; returns their paths.
fn write_copies(wasm: &Path, n: usize, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let bytes = std::fs::read(wasm).with_context(|| format!("reading {}", wasm.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    (0..n)
        .map(|i| {
            let path = dir.join(format!("ring-{i}.wasm"));
            std::fs::write(&path, distinct_copy(&bytes, i))
                .with_context(|| format!("writing {}", path.display()))?;
            Ok(path)
        })
        .collect()
}

impl Bench {
    /// Cold starts of `n` distinct ring modules with an empty cache: compiled in the host's
    /// process, then in a child. Copies and caches go under the launch's log folder.
    ///
    /// # Errors
    /// If a launch fails.
    pub async fn cold_start(&self, n: usize, tag: &str) -> anyhow::Result<Vec<ColdStartRun>> {
        let dir = self.logs.join(tag);
        let copies = write_copies(&self.setup.ring_wasm, n, &dir.join("modules"))?;
        let mut runs = Vec::new();
        for (launch, compile_in_child) in [false, true].into_iter().enumerate() {
            let tag = format!("{tag}-{launch}");
            eprintln!(
                "bench: cold start of {n} distinct modules, compileInChild: {compile_in_child} (namespaces {tag}-*)"
            );
            let setup = Setup {
                module_cache: dir.join(format!("cache-{launch}")),
                compile_in_child,
                ..self.setup.clone()
            };
            let run = self.cold_start_once(&setup, &copies, &tag).await?;
            eprintln!(
                "bench:   all running after {:.1} s; {:.1} MiB PSS then, {:.1} MiB idle",
                run.all_running_s,
                run.started.pss_kib as f64 / 1024.0,
                run.idle.pss_kib as f64 / 1024.0
            );
            runs.push(run);
        }
        Ok(runs)
    }

    async fn cold_start_once(
        &self,
        setup: &Setup,
        copies: &[PathBuf],
        tag: &str,
    ) -> anyhow::Result<ColdStartRun> {
        let n = copies.len();
        let links = self.ring_links(tag, n).await?;
        let entries: Vec<Entry> = links
            .iter()
            .zip(copies)
            .enumerate()
            .map(|(i, (link, wasm))| ring_entry(setup, Variant::Wasm, i, link, wasm))
            .collect();
        let mut arrivals = cluster::watch_arrivals(&self.client, &format!("{tag}-{n}"));
        cluster::write_nonce(&self.client, &format!("{tag}-0"), RING_NAME, 1).await?;
        let started = Instant::now();
        let mut fleet = Fleet::start_host(setup, &self.logs.join(tag), |metrics| {
            host_manifest(setup, true, &entries, metrics)
        })?;
        // Every module compiles before it runs: allow 10 s a module on top of the usual.
        let timeout = self.params.startup_timeout + Duration::from_secs(10 * n as u64);
        cluster::wait_for(&mut arrivals, RING_NAME, 1, timeout)
            .await
            .context("the first ring cycle of the cold start")?;
        let all_running_s = started.elapsed().as_secs_f64();
        let at_start = fleet.memory()?;
        tokio::time::sleep(self.params.settle).await;
        let idle = fleet.idle_memory().await?;
        fleet.stop(Duration::from_secs(15))?;
        Ok(ColdStartRun {
            modules: n,
            compile_in_child: setup.compile_in_child,
            all_running_s,
            started: at_start,
            idle,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_valid_distinct_modules_with_the_same_code() {
        let wasm = wat::parse_str(r#"(module (func (export "f")))"#).expect("wat");
        let a = distinct_copy(&wasm, 0);
        let b = distinct_copy(&wasm, 300);
        assert_ne!(a, b);
        for copy in [&a, &b] {
            assert!(copy.starts_with(&wasm));
            let sections: Vec<_> = wasmparser::Parser::new(0)
                .parse_all(copy)
                .collect::<Result<_, _>>()
                .expect("a valid module");
            let named = sections.iter().any(|p| {
                matches!(p, wasmparser::Payload::CustomSection(c) if c.name() == INSTANCE_SECTION)
            });
            assert!(named, "the instance section is there");
        }
        let payload = wasmparser::Parser::new(0)
            .parse_all(&b)
            .filter_map(Result::ok)
            .find_map(|p| match p {
                wasmparser::Payload::CustomSection(c) => Some(c.data().to_vec()),
                _ => None,
            });
        assert_eq!(payload.as_deref(), Some(&b"300"[..]));
    }
}
