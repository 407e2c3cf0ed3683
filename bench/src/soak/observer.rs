//! What the driver sees of the mirrors: one cluster-wide watch (kube-runtime's `watcher`: a
//! list, then watches, relisting after 410 Gone) of Secrets carrying the mirror's label; each
//! mirror Secret of a soak namespace seen, changed or gone is an [`Observation`], stamped on
//! receipt. After a relist, a source whose Secret was not listed is observed absent. A failed
//! list or watch is retried 200 ms later (the API server's own outages are the chaos, the
//! driver must not add a backoff of its own to its measurements).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ResourceExt as _};
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch;

use super::clock::Clock;
use super::ledger::{Ledger, Observation, Seen, SourceId};
use super::traffic::{MIRRORED_FROM, SEQ_KEY, source_index};

/// Between a failed list or watch and the next try.
const RETRY: Duration = Duration::from_millis(200);

/// Maps mirror Secrets to sources.
#[derive(Debug, Clone)]
pub struct Sources {
    modules: HashMap<String, usize>,
    per_module: usize,
}

impl Sources {
    /// The sources of modules in `namespaces` (module `i` in `namespaces[i]`), `per_module`
    /// each.
    pub fn new(namespaces: &[String], per_module: usize) -> Self {
        Self {
            modules: namespaces
                .iter()
                .enumerate()
                .map(|(i, ns)| (ns.clone(), i))
                .collect(),
            per_module,
        }
    }

    /// The source a Secret `name` in `namespace` mirrors, if it is one.
    pub fn of(&self, namespace: &str, name: &str) -> Option<SourceId> {
        let module = *self.modules.get(namespace)?;
        let index = source_index(name).filter(|i| *i < self.per_module)?;
        Some(SourceId { module, index })
    }

    /// Every source.
    pub fn all(&self) -> impl Iterator<Item = SourceId> + '_ {
        self.modules.values().flat_map(move |&module| {
            (0..self.per_module).map(move |index| SourceId { module, index })
        })
    }
}

/// The sequence number a mirror Secret holds, if it holds one.
pub fn secret_seq(secret: &Secret) -> Option<u64> {
    let bytes = secret.data.as_ref()?.get(SEQ_KEY)?;
    std::str::from_utf8(&bytes.0).ok()?.parse().ok()
}

/// Counts of what the driver's watch went through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WatchCounts {
    /// Observations recorded.
    pub observations: u64,
    /// Lists and watches that failed (and were tried again).
    pub errors: u64,
    /// Relists (including the first list).
    pub lists: u64,
}

/// Watches the mirror Secrets of `sources` until `stop` is raised, recording observations in
/// `ledger`.
pub async fn observe(
    client: Client,
    sources: Sources,
    ledger: Arc<Mutex<Ledger>>,
    clock: Clock,
    mut stop: watch::Receiver<bool>,
) -> WatchCounts {
    let api = Api::<Secret>::all(client);
    let config = watcher::Config::default().labels(MIRRORED_FROM);
    let mut stream = watcher::watcher(api, config).boxed();
    let mut counts = WatchCounts::default();
    let mut listed: HashSet<SourceId> = HashSet::new();
    let record = |seen: Seen, source: SourceId, counts: &mut WatchCounts| {
        let at = clock.now();
        ledger
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .observe(Observation { source, seen, at });
        counts.observations += 1;
    };
    let source_of = |s: &Secret| sources.of(&s.namespace().unwrap_or_default(), &s.name_any());
    let seen_of = |s: &Secret| secret_seq(s).map(Seen::Present);
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = stop.wait_for(|s| *s) => break,
        };
        match event {
            None => break,
            Some(Err(_)) => {
                counts.errors += 1;
                tokio::time::sleep(RETRY).await;
            }
            Some(Ok(Event::Init)) => {
                counts.lists += 1;
                listed.clear();
            }
            Some(Ok(Event::InitApply(secret))) => {
                if let Some(source) = source_of(&secret) {
                    listed.insert(source);
                    if let Some(seen) = seen_of(&secret) {
                        record(seen, source, &mut counts);
                    }
                }
            }
            Some(Ok(Event::InitDone)) => {
                for source in sources.all().filter(|s| !listed.contains(s)) {
                    record(Seen::Absent, source, &mut counts);
                }
            }
            Some(Ok(Event::Apply(secret))) => {
                if let (Some(source), Some(seen)) = (source_of(&secret), seen_of(&secret)) {
                    record(seen, source, &mut counts);
                }
            }
            Some(Ok(Event::Delete(secret))) => {
                if let Some(source) = source_of(&secret) {
                    record(Seen::Absent, source, &mut counts);
                }
            }
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    #[test]
    fn maps_secrets_to_sources() {
        let sources = Sources::new(&["a".into(), "b".into()], 2);
        assert_eq!(
            sources.of("b", "src-1"),
            Some(SourceId {
                module: 1,
                index: 1
            })
        );
        assert_eq!(sources.of("b", "src-2"), None);
        assert_eq!(sources.of("c", "src-0"), None);
        assert_eq!(sources.all().count(), 4);
        let mut secret = Secret::default();
        assert_eq!(secret_seq(&secret), None);
        secret.data = Some([(SEQ_KEY.to_owned(), ByteString(b"42".to_vec()))].into());
        assert_eq!(secret_seq(&secret), Some(42));
    }
}
