//! How a watcher lists and watches, as `kube_runtime::watcher::Config`.

use kube_core::Selector;
use kube_core::params::{ListParams, VersionMatch, WatchParams};

/// Which `resourceVersion` semantics the LIST calls use, as kube-runtime 5.0's
/// `watcher::ListSemantic`.
#[derive(Clone, Default, Debug, PartialEq)]
pub enum ListSemantic {
    /// The most recent data (a consistent read from etcd); no `resourceVersion` is sent.
    #[default]
    MostRecent,
    /// Any data, possibly stale (`resourceVersion=0`, `resourceVersionMatch=NotOlderThan`):
    /// served from the API server's cache, cheaper, but may go back in time after a restart.
    Any,
}

/// How the watcher gets the initial state, as kube-runtime 5.0's
/// `watcher::InitialListStrategy`.
#[derive(Clone, Default, Debug, PartialEq)]
pub enum InitialListStrategy {
    /// Paginated LIST calls, then a WATCH from the list's `resourceVersion`.
    #[default]
    ListWatch,
    /// One WATCH with `sendInitialEvents=true` that first streams the existing objects
    /// (Kubernetes 1.27+ behind a feature gate, on by default from 1.32). An API server that
    /// lacks it (such as v1.20) rejects or ignores the parameter, as it would for kube.
    StreamingList,
}

/// Parameters of a watcher, as kube-runtime 5.0's `watcher::Config` (same fields, defaults and
/// builder methods).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Only objects whose labels match this selector (`labelSelector`); `None` for all.
    pub label_selector: Option<String>,
    /// Only objects whose fields match this selector (`fieldSelector`); `None` for all.
    pub field_selector: Option<String>,
    /// The server-side watch timeout in seconds (`timeoutSeconds`); `None` lets the host send
    /// 290, as kube does. The watcher also ends a watch that stays silent for this long plus
    /// 5 seconds, and resumes it; `Some(0)` disables that idle limit.
    pub timeout: Option<u32>,
    /// `resourceVersion` semantics of the LIST calls.
    pub list_semantic: ListSemantic,
    /// How the initial state is fetched.
    pub initial_list_strategy: InitialListStrategy,
    /// Objects per LIST page (`limit`); `None` lists everything in one response. Default
    /// 500, as kube's (client-go's) pager.
    pub page_size: Option<u32>,
    /// Ask for `BOOKMARK` events (`allowWatchBookmarks`), which move the resume point
    /// forward without an object change. Default `true`.
    pub bookmarks: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            label_selector: None,
            field_selector: None,
            timeout: None,
            list_semantic: ListSemantic::default(),
            initial_list_strategy: InitialListStrategy::default(),
            page_size: Some(500),
            bookmarks: true,
        }
    }
}

impl Config {
    /// Sets the server-side watch timeout, in seconds.
    #[must_use]
    pub fn timeout(mut self, timeout_secs: u32) -> Self {
        self.timeout = Some(timeout_secs);
        self
    }

    /// Sets the field selector, e.g. `metadata.name=x`.
    #[must_use]
    pub fn fields(mut self, field_selector: &str) -> Self {
        self.field_selector = Some(field_selector.to_string());
        self
    }

    /// Sets the label selector, e.g. `app=x,tier!=db`.
    #[must_use]
    pub fn labels(mut self, label_selector: &str) -> Self {
        self.label_selector = Some(label_selector.to_string());
        self
    }

    /// Sets the label selector from a kube-core [`Selector`].
    #[must_use]
    pub fn labels_from(mut self, selector: &Selector) -> Self {
        self.label_selector = Some(selector.to_string());
        self
    }

    /// Sets the list semantics.
    #[must_use]
    pub fn list_semantic(mut self, semantic: ListSemantic) -> Self {
        self.list_semantic = semantic;
        self
    }

    /// Lists with [`ListSemantic::Any`] (from the API server's cache).
    #[must_use]
    pub fn any_semantic(self) -> Self {
        self.list_semantic(ListSemantic::Any)
    }

    /// Does not ask for bookmarks.
    #[must_use]
    pub fn disable_bookmarks(mut self) -> Self {
        self.bookmarks = false;
        self
    }

    /// Sets the LIST page size (objects per page).
    #[must_use]
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = Some(page_size);
        self
    }

    /// Uses [`InitialListStrategy::StreamingList`] (needs bookmarks, as in kube).
    #[must_use]
    pub fn streaming_lists(mut self) -> Self {
        self.initial_list_strategy = InitialListStrategy::StreamingList;
        self
    }

    /// The parameters of one LIST page (the continue token is set by the caller).
    pub(crate) fn to_list_params(&self) -> ListParams {
        let (resource_version, version_match) = match self.list_semantic {
            ListSemantic::Any => (Some("0".to_string()), Some(VersionMatch::NotOlderThan)),
            ListSemantic::MostRecent => (None, None),
        };
        ListParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            resource_version,
            version_match,
            limit: self.page_size,
            continue_token: None,
            ..ListParams::default()
        }
    }

    /// The parameters of a WATCH; `initial` for the streaming-list watch that replaces LIST.
    pub(crate) fn to_watch_params(&self, initial: bool) -> WatchParams {
        WatchParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            timeout: self.timeout,
            bookmarks: self.bookmarks,
            send_initial_events: initial
                && self.initial_list_strategy == InitialListStrategy::StreamingList,
        }
    }
}
