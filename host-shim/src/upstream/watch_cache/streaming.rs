//! Whether the API server serves streaming lists, learnt from the server itself.
//!
//! kube-apiserver refuses a watch with `sendInitialEvents=true` (a 422 `Invalid`, "forbidden
//! for watch unless the WatchList feature gate is enabled") while its `WatchList` feature gate
//! is off: off by default in 1.33, on by default from 1.34, and switchable on every version.
//! The shared watch cache could serve such a watch from its store on any server, so before it
//! does, the server must have shown that it serves them: the first streaming list a module
//! makes goes upstream as the module sent it (one at a time: the others wait for its answer);
//! once the server has accepted one (a 2xx answer), streaming lists are served from the cache.
//! A refusal (or a probe that ends without an answer) leaves it unknown, and the next streaming
//! list is sent as it is in turn, so every module gets the server's own answer, as natively.

use tokio::sync::watch;

/// What the host knows of the API server's streaming lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    /// Nothing yet, or the last streaming list sent as it is was refused.
    Unknown,
    /// One streaming list is upstream as its module sent it; the others wait for its answer.
    Probing,
    /// The server accepted a streaming list: the cache serves them.
    Served,
}

/// The host's knowledge of whether the API server serves streaming lists (see the module
/// docs). One per watch cache, shared by its modules.
#[derive(Debug)]
pub struct StreamingLists {
    known: watch::Sender<Known>,
}

impl Default for StreamingLists {
    fn default() -> Self {
        Self {
            known: watch::Sender::new(Known::Unknown),
        }
    }
}

/// How a module's streaming list goes: from the cache, or upstream as it was sent, as the
/// probe whose answer tells the others.
#[derive(Debug)]
pub enum StreamingRoute {
    /// The server serves streaming lists: the cache serves this one.
    Cache,
    /// Send it upstream as it is and report its answer with [`Probe::accepted`]; dropping the
    /// probe without that (a refusal, an error, the op cancelled) lets the next one try.
    Upstream(Probe),
}

/// The one streaming list upstream whose answer the others wait for.
#[derive(Debug)]
pub struct Probe {
    known: watch::Sender<Known>,
    answered: bool,
}

impl Probe {
    /// The server accepted the streaming list (a 2xx answer): from now on the cache serves
    /// them.
    pub fn accepted(mut self) {
        self.answered = true;
        self.known.send_replace(Known::Served);
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        if !self.answered {
            self.known.send_replace(Known::Unknown);
        }
    }
}

impl StreamingLists {
    /// Whether the server has accepted a streaming list.
    pub fn served(&self) -> bool {
        *self.known.borrow() == Known::Served
    }

    /// The route of one streaming list: [`StreamingRoute::Cache`] once the server has
    /// accepted one; else this call becomes the probe, or, while another is upstream, waits
    /// for its answer and decides again.
    pub async fn route(&self) -> StreamingRoute {
        let mut answers = self.known.subscribe();
        loop {
            let mut probing = false;
            self.known.send_if_modified(|known| {
                probing = *known == Known::Unknown;
                if probing {
                    *known = Known::Probing;
                }
                probing
            });
            if probing {
                return StreamingRoute::Upstream(Probe {
                    known: self.known.clone(),
                    answered: false,
                });
            }
            match *answers.borrow_and_update() {
                Known::Served => return StreamingRoute::Cache,
                Known::Unknown => continue,
                Known::Probing => {}
            }
            // The sender lives in `self`, so `changed` only fails once it is dropped.
            if answers.changed().await.is_err() {
                return StreamingRoute::Cache;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn is_probe(route: &StreamingRoute) -> bool {
        matches!(route, StreamingRoute::Upstream(_))
    }

    #[tokio::test]
    async fn the_first_streaming_list_probes_and_an_acceptance_opens_the_cache() {
        let lists = StreamingLists::default();
        assert!(!lists.served());
        let StreamingRoute::Upstream(probe) = lists.route().await else {
            panic!("the first streaming list goes upstream");
        };
        let waiting = tokio::time::timeout(Duration::from_millis(50), lists.route()).await;
        assert!(
            waiting.is_err(),
            "a second one waits for the probe's answer"
        );
        let waiter = async { lists.route().await };
        let (route, ()) = tokio::join!(waiter, async { probe.accepted() });
        assert!(matches!(route, StreamingRoute::Cache));
        assert!(lists.served());
        assert!(matches!(lists.route().await, StreamingRoute::Cache));
    }

    #[tokio::test]
    async fn a_refused_probe_lets_the_next_streaming_list_go_upstream_as_it_is() {
        let lists = StreamingLists::default();
        let probe = lists.route().await;
        assert!(is_probe(&probe));
        let (route, ()) = tokio::join!(lists.route(), async { drop(probe) });
        assert!(
            is_probe(&route),
            "the waiter sends its own, and gets its own answer"
        );
        assert!(!lists.served());
        drop(route);
        assert!(is_probe(&lists.route().await));
    }
}
