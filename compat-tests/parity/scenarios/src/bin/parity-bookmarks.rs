//! Bookmarks: `Api::watch` with bookmarks (on by default) three times in a row, each time from
//! the last resourceVersion seen — the list's, an object's, or a bookmark's: watch #1 with a
//! thirty-second timeout (long enough for the harness to create an object during it, also
//! when a loaded machine starts the programs slowly), watch #2 with a ten-second timeout,
//! watch #3 without one. The apiserver sends a bookmark shortly before a watch's timeout.
//! Reported: the events (consecutive bookmarks once), and where each watch resumed from, by
//! origin (never the resourceVersion itself). Alongside, a `kube::runtime::watcher` with watch
//! #1's timeout keeps rolling its watch over, resuming from the bookmarks it receives; it
//! reports its `Apply` events. Its first watch, like watch #1, sees the harness's object
//! before the bookmark sent ahead of the timeout, so its second resumes from that bookmark.
//! (With a shorter timeout, whether a roll resumes from the object's version or a bookmark's
//! would depend on when in the roll the object was created.)
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ListParams, ResourceExt, WatchEvent, WatchParams};
use kube::runtime::watcher::{self, Event, watcher};
use parity_scenarios::observe;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let config_maps = Api::<ConfigMap>::default_namespaced(client);
    let rolling = watcher(
        config_maps.clone(),
        watcher::Config::default().timeout(FIRST_TIMEOUT),
    );
    let rolling = async {
        let mut rolling = std::pin::pin!(rolling);
        while let Some(event) = rolling.try_next().await? {
            if let Event::Apply(cm) = event {
                observe("watcher", format!("Apply {}", cm.name_any()));
            }
        }
        anyhow::Ok(())
    };
    let (raw, rolling) = futures::join!(raw_watches(&config_maps), rolling);
    raw.and(rolling)
}

/// Watch #1's timeout in seconds: the harness creates an object while it runs.
const FIRST_TIMEOUT: u32 = 30;

/// The three watches with `Api::watch`, reported as stream `watch`.
async fn raw_watches(config_maps: &Api<ConfigMap>) -> anyhow::Result<()> {
    let list = config_maps.list(&ListParams::default()).await?;
    let mut names: Vec<String> = list.items.iter().map(|cm| cm.name_any()).collect();
    names.sort();
    observe("watch", format!("listed {names:?}"));
    let mut version = list.metadata.resource_version.unwrap_or_default();
    let mut origin = "the list".to_string();
    for round in 1..=3 {
        let params = match round {
            1 => WatchParams::default().timeout(FIRST_TIMEOUT),
            2 => WatchParams::default().timeout(10),
            _ => WatchParams::default(),
        };
        observe(
            "watch",
            format!("watch #{round} from the resourceVersion of {origin}"),
        );
        let mut events = config_maps.watch(&params, &version).await?.boxed();
        let mut last_was_bookmark = false;
        while let Some(event) = events.try_next().await? {
            let (text, rv) = match &event {
                WatchEvent::Added(cm) => {
                    (format!("Added {}", cm.name_any()), cm.resource_version())
                }
                WatchEvent::Modified(cm) => {
                    (format!("Modified {}", cm.name_any()), cm.resource_version())
                }
                WatchEvent::Deleted(cm) => {
                    (format!("Deleted {}", cm.name_any()), cm.resource_version())
                }
                WatchEvent::Bookmark(b) => (
                    "Bookmark".to_string(),
                    Some(b.metadata.resource_version.clone()),
                ),
                WatchEvent::Error(e) => (format!("Error {}", e.code), None),
            };
            let is_bookmark = matches!(event, WatchEvent::Bookmark(_));
            if !(is_bookmark && last_was_bookmark) {
                observe("watch", format!("#{round} {text}"));
            }
            last_was_bookmark = is_bookmark;
            if let Some(rv) = rv {
                version = rv;
                origin = match &event {
                    WatchEvent::Bookmark(_) => "a bookmark".to_string(),
                    _ => text,
                };
            }
        }
        observe("watch", format!("#{round} ended"));
    }
    Ok(())
}
