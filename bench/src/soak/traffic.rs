//! The steady traffic: the driver changes the healthy modules' source ConfigMaps at a fixed
//! rate — taking the sources in turn, putting a new sequence number into one, or now and then
//! deleting it (and re-creating it on its next turn) — and records every change in the
//! [`Ledger`]. A write the API server does not answer (it is down, or the connection was cut)
//! is tried again every 200 ms until it is answered, so no change is skipped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube_wasm_e2e::objects::config_map;
use tokio::sync::watch;

use super::clock::Clock;
use super::ledger::{Change, ChangeKind, Ledger, SourceId};

/// The label the configmap-mirror example selects ConfigMaps by.
pub const MIRROR_LABEL: (&str, &str) = ("kube-wasm.dev/mirror", "true");
/// The label the mirror puts on each Secret: the ConfigMap's name.
pub const MIRRORED_FROM: &str = "kube-wasm.dev/mirrored-from";
/// The data key holding a source's sequence number.
pub const SEQ_KEY: &str = "seq";
/// The driver's field manager.
const MANAGER: &str = "kube-wasm-soak";
/// Between two attempts at an unanswered write.
const RETRY: Duration = Duration::from_millis(200);

/// The name of source `index` (the same in every module's namespace).
pub fn source_name(index: usize) -> String {
    format!("src-{index}")
}

/// The index of the source named `name`.
pub fn source_index(name: &str) -> Option<usize> {
    name.strip_prefix("src-")?.parse().ok()
}

/// Writes and what they cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteCounts {
    /// Changes made.
    pub changes: u64,
    /// Attempts that were not answered (tried again).
    pub failed_attempts: u64,
}

/// The driver's writer.
#[derive(Clone)]
pub struct Traffic {
    /// The driver's client.
    pub client: Client,
    /// The healthy modules' namespaces (module `i` in `namespaces[i]`).
    pub namespaces: Vec<String>,
    /// Sources per module.
    pub sources: usize,
    /// Where changes are recorded.
    pub ledger: Arc<Mutex<Ledger>>,
    /// The run's clock.
    pub clock: Clock,
}

/// A source's state in the driver.
#[derive(Debug, Clone, Copy)]
struct SourceState {
    present: bool,
    changes: u64,
}

impl Traffic {
    fn api(&self, module: usize) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespaces[module])
    }

    /// Makes one change, trying until the API server answers; `None` if `stop` was raised
    /// first. Every unanswered attempt adds to `counts`.
    async fn write(
        &self,
        source: SourceId,
        seq: u64,
        kind: ChangeKind,
        stop: &watch::Receiver<bool>,
        counts: &mut WriteCounts,
    ) -> Option<Change> {
        let api = self.api(source.module);
        let name = source_name(source.index);
        let first_try = self.clock.now();
        loop {
            let sent = self.clock.now();
            let result = match kind {
                ChangeKind::Put => {
                    let value = seq.to_string();
                    let cm = config_map(&name, &[MIRROR_LABEL], &[(SEQ_KEY, &value)]);
                    let mut cm = serde_json::to_value(&cm).unwrap_or_default();
                    cm["apiVersion"] = "v1".into();
                    cm["kind"] = "ConfigMap".into();
                    let params = PatchParams::apply(MANAGER).force();
                    api.patch(&name, &params, &Patch::Apply(&cm))
                        .await
                        .map(drop)
                }
                ChangeKind::Delete => match api.delete(&name, &DeleteParams::default()).await {
                    Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                    other => other.map(drop),
                },
            };
            match result {
                Ok(()) => {
                    let change = Change {
                        source,
                        seq,
                        kind,
                        first_try,
                        sent,
                    };
                    self.ledger
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .change(change);
                    counts.changes += 1;
                    return Some(change);
                }
                Err(_) => counts.failed_attempts += 1,
            }
            if *stop.borrow() {
                return None;
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    /// Creates every source with sequence number 0 (recorded as changes).
    ///
    /// # Errors
    /// If `stop` is raised first.
    pub async fn create_sources(&self, stop: &watch::Receiver<bool>) -> anyhow::Result<()> {
        let mut counts = WriteCounts::default();
        for module in 0..self.namespaces.len() {
            for index in 0..self.sources {
                let source = SourceId { module, index };
                self.write(source, 0, ChangeKind::Put, stop, &mut counts)
                    .await
                    .ok_or_else(|| anyhow::anyhow!("stopped while creating the sources"))?;
            }
        }
        Ok(())
    }

    /// Changes the sources in turn, `rate` changes a second, until `stop` is raised; every
    /// `delete_every`-th change of a source deletes it (0: never), and its next change
    /// re-creates it. Sequence numbers go on from 1.
    pub async fn run(
        &self,
        rate: f64,
        delete_every: u64,
        mut stop: watch::Receiver<bool>,
    ) -> WriteCounts {
        let mut counts = WriteCounts::default();
        let all: Vec<SourceId> = (0..self.namespaces.len())
            .flat_map(|module| (0..self.sources).map(move |index| SourceId { module, index }))
            .collect();
        if all.is_empty() || rate <= 0.0 {
            let _ = stop.wait_for(|s| *s).await;
            return counts;
        }
        let mut states = vec![
            SourceState {
                present: true,
                changes: 0,
            };
            all.len()
        ];
        let mut interval = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for (seq, turn) in (1..).zip((0..all.len()).cycle()) {
            tokio::select! {
                _ = interval.tick() => {}
                _ = stop.wait_for(|s| *s) => break,
            }
            let state = &mut states[turn];
            state.changes += 1;
            let kind = if state.present
                && delete_every > 0
                && state.changes.is_multiple_of(delete_every)
            {
                ChangeKind::Delete
            } else {
                ChangeKind::Put
            };
            if self
                .write(all[turn], seq, kind, &stop, &mut counts)
                .await
                .is_none()
            {
                break;
            }
            state.present = kind == ChangeKind::Put;
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_names_round_trip() {
        assert_eq!(source_name(7), "src-7");
        assert_eq!(source_index("src-7"), Some(7));
        assert_eq!(source_index("other"), None);
    }
}
