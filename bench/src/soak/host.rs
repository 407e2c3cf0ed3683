//! The host under soak: its manifest (the healthy configmap-mirror modules, each in its own
//! namespace, and the hostile modules), and its process — started, SIGKILLed and started
//! again with the same manifest, each start a new incarnation.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::str::FromStr;

use anyhow::Context as _;
use kube_wasm_e2e::manifest::{Entry, quote, render};

/// One hostile module: `HOSTILE_MODE` and, for `flood`, `HOSTILE_FLOOD`; written `MODE` or
/// `MODE/FLOOD` (e.g. `loop`, `flood/watches`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hostile {
    /// `HOSTILE_MODE`.
    pub mode: String,
    /// `HOSTILE_FLOOD`, if given.
    pub flood: Option<String>,
}

impl Hostile {
    /// How it is written on the command line and in the report.
    pub fn label(&self) -> String {
        match &self.flood {
            Some(flood) => format!("{}/{flood}", self.mode),
            None => self.mode.clone(),
        }
    }
}

impl FromStr for Hostile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (mode, flood) = match s.split_once('/') {
            Some((mode, flood)) => (mode, Some(flood.to_owned())),
            None => (s, None),
        };
        let word =
            |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !word(mode) || !flood.as_deref().is_none_or(word) {
            return Err(format!("a hostile module is MODE or MODE/FLOOD, not {s:?}"));
        }
        Ok(Self {
            mode: mode.to_owned(),
            flood,
        })
    }
}

/// What the host runs.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// The configmap-mirror module file.
    pub mirror_wasm: PathBuf,
    /// The hostile module file.
    pub hostile_wasm: PathBuf,
    /// One healthy mirror module per namespace, named `mirror-<i>`.
    pub namespaces: Vec<String>,
    /// The hostile modules, named `hostile-<i>`, all in `hostile_namespace`.
    pub hostile: Vec<Hostile>,
    /// The hostile modules' namespace.
    pub hostile_namespace: String,
    /// The hostile modules' memory cap (e.g. `32Mi`).
    pub hostile_memory: String,
    /// More environment of every hostile module (`KEY`, `VALUE`).
    pub hostile_env: Vec<(String, String)>,
    /// More top-level manifest lines (YAML, e.g. `entryDeadline: 2s`).
    pub settings: Vec<String>,
    /// The precompiled-module cache (kept across incarnations).
    pub cache_dir: PathBuf,
}

/// The name of healthy module `i`.
pub fn mirror_name(i: usize) -> String {
    format!("mirror-{i}")
}

/// The name of hostile module `i`.
pub fn hostile_name(i: usize) -> String {
    format!("hostile-{i}")
}

/// The manifest of `fleet` with the metrics endpoint on `metrics`.
pub fn manifest(fleet: &Fleet, metrics: SocketAddr) -> String {
    let mut entries: Vec<Entry> = fleet
        .namespaces
        .iter()
        .enumerate()
        .map(|(i, ns)| Entry::with_wasm(&mirror_name(i), &fleet.mirror_wasm).namespace(ns))
        .collect();
    for (i, hostile) in fleet.hostile.iter().enumerate() {
        let mut entry = Entry::with_wasm(&hostile_name(i), &fleet.hostile_wasm)
            .namespace(&fleet.hostile_namespace)
            .memory(&fleet.hostile_memory)
            .env("HOSTILE_MODE", &hostile.mode);
        if let Some(flood) = &hostile.flood {
            entry = entry.env("HOSTILE_FLOOD", flood);
        }
        for (key, value) in &fleet.hostile_env {
            entry = entry.env(key, value);
        }
        entries.push(entry);
    }
    let mut settings = format!("metricsAddr: {}", quote(&metrics.to_string()));
    for line in &fleet.settings {
        settings.push('\n');
        settings.push_str(line);
    }
    render(&fleet.cache_dir.to_string_lossy(), &settings, &entries)
}

/// The host process: `host-shim run --kubeconfig K --manifest M`, its output appended to
/// `host.out` and `host.err` in its folder across incarnations. Dropping it kills it.
pub struct Host {
    host_shim: PathBuf,
    kubeconfig: PathBuf,
    manifest: PathBuf,
    dir: PathBuf,
    child: Option<Child>,
    incarnation: usize,
    started_at: f64,
}

fn append(path: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

impl Host {
    /// A host not started yet, running `manifest` with output in `dir`.
    pub fn new(host_shim: &Path, kubeconfig: &Path, manifest: &Path, dir: &Path) -> Self {
        Self {
            host_shim: host_shim.to_path_buf(),
            kubeconfig: kubeconfig.to_path_buf(),
            manifest: manifest.to_path_buf(),
            dir: dir.to_path_buf(),
            child: None,
            incarnation: 0,
            started_at: 0.0,
        }
    }

    /// Starts a new incarnation (numbered from 1); `at` (run seconds) goes into the logs.
    ///
    /// # Errors
    /// If it is running or cannot be started.
    pub fn start(&mut self, at: f64) -> anyhow::Result<()> {
        anyhow::ensure!(self.child.is_none(), "the host is running already");
        self.incarnation += 1;
        let banner = format!(
            "==== soak: host incarnation {} started at {at:.1} s ====\n",
            self.incarnation
        );
        let mut out = append(&self.dir.join("host.out"))?;
        let mut err = append(&self.dir.join("host.err"))?;
        out.write_all(banner.as_bytes())?;
        err.write_all(banner.as_bytes())?;
        let child = Command::new(&self.host_shim)
            .arg("run")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--manifest")
            .arg(&self.manifest)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("starting {}", self.host_shim.display()))?;
        self.child = Some(child);
        self.started_at = at;
        Ok(())
    }

    /// SIGKILLs it and reaps it (nothing if it is not running).
    ///
    /// # Errors
    /// If it cannot be signalled or waited for.
    pub fn kill(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill().context("killing the host")?;
            child.wait().context("reaping the host")?;
        }
        Ok(())
    }

    /// If it ended by itself: reaps it and returns how it ended.
    ///
    /// # Errors
    /// If its state cannot be read.
    pub fn exited(&mut self) -> anyhow::Result<Option<ExitStatus>> {
        let Some(child) = self.child.as_mut() else {
            return Ok(None);
        };
        let status = child.try_wait().context("checking on the host")?;
        if status.is_some() {
            self.child = None;
        }
        Ok(status)
    }

    /// Its process id while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The current incarnation (0 before the first start).
    pub fn incarnation(&self) -> usize {
        self.incarnation
    }

    /// When the current incarnation was started (run seconds).
    pub fn started_at(&self) -> f64 {
        self.started_at
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_of_mirrors_and_hostile_modules() {
        let fleet = Fleet {
            mirror_wasm: "/m.wasm".into(),
            hostile_wasm: "/h.wasm".into(),
            namespaces: vec!["s-0".into(), "s-1".into()],
            hostile: vec![
                "loop".parse().expect("spec"),
                "flood/watches".parse().expect("spec"),
            ],
            hostile_namespace: "s-hostile".into(),
            hostile_memory: "32Mi".into(),
            hostile_env: vec![("HOSTILE_COUNT".into(), "9".into())],
            settings: vec!["entryDeadline: 2s".into()],
            cache_dir: "/c".into(),
        };
        let text = manifest(&fleet, "127.0.0.1:9".parse().expect("addr"));
        assert!(
            text.starts_with(
                "cacheDir: \"/c\"\nmetricsAddr: \"127.0.0.1:9\"\nentryDeadline: 2s\nmodules:\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "  - name: \"mirror-1\"\n    wasm: \"/m.wasm\"\n    namespace: \"s-1\"\n"
            ),
            "{text}"
        );
        assert!(text.ends_with("  - name: \"hostile-1\"\n    wasm: \"/h.wasm\"\n    namespace: \"s-hostile\"\n    memory: \"32Mi\"\n    env:\n      \"HOSTILE_MODE\": \"flood\"\n      \"HOSTILE_FLOOD\": \"watches\"\n      \"HOSTILE_COUNT\": \"9\"\n"), "{text}");
        assert!(
            text.contains("\"HOSTILE_MODE\": \"loop\"\n      \"HOSTILE_COUNT\": \"9\"\n  - "),
            "{text}"
        );
    }

    #[test]
    fn hostile_specs() {
        let h: Hostile = "flood/bodies".parse().expect("spec");
        assert_eq!(
            (h.mode.as_str(), h.flood.as_deref()),
            ("flood", Some("bodies"))
        );
        assert_eq!(h.label(), "flood/bodies");
        assert_eq!("oom".parse::<Hostile>().expect("spec").flood, None);
        assert!("".parse::<Hostile>().is_err());
        assert!("flood/".parse::<Hostile>().is_err());
        assert!("a b".parse::<Hostile>().is_err());
    }
}
