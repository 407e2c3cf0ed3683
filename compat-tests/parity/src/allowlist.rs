//! `allowlist.toml`: the differences between the builds that are known and accepted, each
//! with its reason. The file is reviewed like code.
//!
//! ```toml
//! [[allow]]
//! scenario = "parity-create"          # the scenario's program
//! aspect = "requests"                 # state | requests | observations
//! pattern = "GET configmaps"          # a substring of the row `aspect | native | wasm`
//! reason = "why this difference is acceptable"
//! ```
//!
//! A difference is allowed when an entry names its scenario, the first word of its aspect,
//! and a substring of its row. An entry of a scenario that allows no difference of a run
//! against the wasm build is stale and reported, so the file does not rot.

use crate::report::{ASPECTS, Difference};
use anyhow::{Context, bail};
use serde::Deserialize;
use std::path::Path;

/// One accepted difference.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The scenario's program name.
    pub scenario: String,
    /// `state`, `requests` or `observations`.
    pub aspect: String,
    /// A substring of the difference's row `aspect | native | wasm`.
    pub pattern: String,
    /// Why the difference is acceptable.
    pub reason: String,
}

impl Entry {
    /// Whether this entry allows `difference`.
    pub fn allows(&self, difference: &Difference) -> bool {
        difference.scenario == self.scenario
            && difference.aspect.split(' ').next() == Some(self.aspect.as_str())
            && difference.line().contains(&self.pattern)
    }
}

/// The parsed allowlist.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Allowlist {
    /// The entries, in file order.
    #[serde(default)]
    pub allow: Vec<Entry>,
}

impl Allowlist {
    /// Parses `text`; an entry with an unknown aspect, an empty pattern or reason is an error.
    pub fn parse(text: &str) -> anyhow::Result<Allowlist> {
        let list: Allowlist = toml::from_str(text).context("allowlist.toml is not valid")?;
        for (i, entry) in list.allow.iter().enumerate() {
            if !ASPECTS.contains(&entry.aspect.as_str()) {
                bail!(
                    "allowlist entry {}: aspect must be one of {ASPECTS:?}",
                    i + 1
                );
            }
            if entry.pattern.trim().is_empty() || entry.reason.trim().is_empty() {
                bail!(
                    "allowlist entry {}: pattern and reason must not be empty",
                    i + 1
                );
            }
        }
        Ok(list)
    }

    /// Reads and parses the file at `path`.
    pub fn load(path: &Path) -> anyhow::Result<Allowlist> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Allowlist::parse(&text)
    }

    /// Splits `differences` into (allowed, not allowed), and returns the entries of
    /// `scenario` that allowed none of them (stale).
    pub fn apply<'a>(
        &'a self,
        scenario: &str,
        differences: Vec<Difference>,
    ) -> (Vec<Difference>, Vec<Difference>, Vec<&'a Entry>) {
        let (allowed, denied): (Vec<Difference>, Vec<Difference>) = differences
            .into_iter()
            .partition(|d| self.allow.iter().any(|e| e.allows(d)));
        let stale = self
            .allow
            .iter()
            .filter(|e| e.scenario == scenario && !allowed.iter().any(|d| e.allows(d)))
            .collect();
        (allowed, denied, stale)
    }
}
