//! The data of one module's wasmtime `Store`: everything the host functions need, and nothing
//! shared with other modules except the (cheaply cloned) upstream client.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::watch;
use wasmtime_wasi::p1::WasiP1Ctx;

use crate::metrics::Metrics;
use crate::runtime::func_refs::FuncRefProfile;
use crate::runtime::idle_state::IdleState;
use crate::runtime::memory_cap::MemoryCap;
use crate::runtime::ops::{CompletionSender, OpTable, QueuedCompletion, StreamTable};
use crate::runtime::quota::{ByteBudget, Quotas, WarnThrottle};
use crate::runtime::stop::Phase;
use crate::upstream::client::Upstream;
use crate::upstream::limits::OpLimits;
use crate::upstream::permissions::{Denied, Permissions};
use crate::upstream::request_info::RequestInfo;
use crate::upstream::request_uri::RequestUri;

/// What op work tasks are given: the API server, where to send completions, and the host's
/// stop phase.
#[derive(Clone)]
pub struct OpContext {
    /// The API server, through kube's client acting as the module's identity.
    pub upstream: Upstream,
    /// The module's name and permissions, checked before a request leaves the host.
    pub access: Arc<Access>,
    /// The host's metrics.
    pub metrics: Metrics,
    /// The module's completion queue.
    pub completions: CompletionSender,
    /// The host's stop phase (`stop_signal` waits on it).
    pub phase: watch::Receiver<Phase>,
    /// Size limits.
    pub limits: OpLimits,
    /// The tokio runtime op tasks are spawned on.
    pub runtime: Handle,
    /// The host's shared watches, if it shares them (see [`crate::upstream::watch_cache`]).
    pub shared_watches: Option<crate::upstream::watch_cache::ModuleWatches>,
    /// The module's quotas (see [`crate::runtime::quota`]).
    pub quotas: Quotas,
    /// The module's buffered-bytes budget ([`Quotas::buffered_bytes`]).
    pub budget: ByteBudget,
    /// Rate-limits the module's denial and refusal warnings in the host's log.
    pub warnings: Arc<WarnThrottle>,
}

/// Who a module is and what it may do.
#[derive(Debug, Clone)]
pub struct Access {
    /// The module's name (named in denials).
    pub module: String,
    /// Its allowlist; `None`: everything is allowed.
    pub permissions: Option<Permissions>,
}

impl Access {
    /// Judges `request` as the API server will: classifies its URI as kube-apiserver does
    /// ([`RequestUri`], [`RequestInfo`]), rewrites the URI to the form judged
    /// ([`RequestUri::normalized`]) so what was checked is what is sent, and checks the
    /// module's permissions. Returns the judgement (for the shared watch cache).
    ///
    /// # Errors
    /// [`Denied`] if the request cannot be classified with certainty (whatever the
    /// permissions), or the module's permissions do not allow it.
    pub fn authorize<B>(&self, request: &mut http::Request<B>) -> Result<Judged, Denied> {
        self.judge(request, Permissions::check)
    }

    /// [`authorize`](Self::authorize) for a websocket upgrade: one to `pods/exec`,
    /// `pods/attach` or `pods/portforward` also needs `create` (see
    /// [`Permissions::check_websocket`]).
    ///
    /// # Errors
    /// As [`authorize`](Self::authorize).
    pub fn authorize_websocket<B>(&self, request: &mut http::Request<B>) -> Result<Judged, Denied> {
        self.judge(request, Permissions::check_websocket)
    }

    fn judge<B>(
        &self,
        request: &mut http::Request<B>,
        check: fn(&Permissions, &str, &RequestInfo) -> Result<(), Denied>,
    ) -> Result<Judged, Denied> {
        let method = request.method().clone();
        let sent = request.uri().to_string();
        let unclassifiable =
            |reason| Denied::unclassifiable(&self.module, method.as_str(), &sent, reason);
        let uri = RequestUri::parse(&sent).map_err(unclassifiable)?;
        let info = RequestInfo::of(&method, &uri).map_err(unclassifiable)?;
        let normalized = http::Uri::try_from(uri.normalized()).map_err(|e| {
            unclassifiable(crate::upstream::request_uri::Unclassifiable(format!(
                "its normal form does not parse: {e}"
            )))
        })?;
        *request.uri_mut() = normalized;
        if let Some(permissions) = &self.permissions {
            check(permissions, &self.module, &info)?;
        }
        Ok(Judged { info, uri })
    }
}

/// A request as [`Access::authorize`] judged it: read once, for the permission check and the
/// shared watch cache alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// What it does, as kube-apiserver classifies it.
    pub info: RequestInfo,
    /// Its URI as the API server reads it (the request now carries its normal form).
    pub uri: RequestUri,
}

/// The `T` of a module's `Store<T>`.
pub struct HostState {
    /// The module's name in the host (for logs).
    pub name: Arc<str>,
    /// WASI preview 1 (stdio, environment, clocks, random; no files, no sockets).
    pub wasi: WasiP1Ctx,
    /// The module's memory cap (the store's resource limiter).
    pub memory_cap: MemoryCap,
    /// The module's live ops.
    pub ops: OpTable,
    /// The writer ends and credit of the module's `stream_open` ops (ABI 1.1).
    pub streams: StreamTable,
    /// Answers to ops refused by a quota, waiting for delivery (at most
    /// [`Quotas::pending_ops`]; the module loop delivers them before anything else).
    pub refusals: VecDeque<QueuedCompletion>,
    /// The minor ABI version the guest was built for (from `kube_wasm_abi_version`); what
    /// the host may send it depends on it.
    pub abi_minor: u16,
    /// What op tasks need; every op task holds a reference, not a copy.
    pub ctx: Arc<OpContext>,
    /// Whether the module ever called `stop_signal`: a module that never did is ended at once
    /// when the host stops.
    pub asked_for_stop: bool,
    /// Epoch ticks spent in the current guest entry.
    pub entry_ticks: u64,
    /// Epoch ticks a single guest entry may take before it is ended.
    pub entry_tick_budget: u64,
    /// The wall-clock equivalent of `entry_tick_budget`, for messages.
    pub entry_deadline: Duration,
    /// The profile its indirect calls are reported into, if it runs an instrumented module
    /// (see [`crate::runtime::func_refs`]).
    pub func_ref_profile: Option<Arc<FuncRefProfile>>,
    /// What its idle polls told (ABI 1.4, see [`crate::runtime::idle`]).
    pub idle: IdleState,
    /// Whether it is a reactor module (ABI 1.4: `kube_wasm_start` instead of `_start`).
    pub reactor: bool,
    /// A reactor module's wake op: the op that calls `kube_wasm_wake` at the next timer its
    /// last idle poll named, and that timer.
    pub wake: Option<(kube_wasm_abi::OpId, tokio::time::Instant)>,
}

impl HostState {
    /// Resets the per-entry tick count and idle polls; call before every call into the guest.
    pub fn begin_entry(&mut self) {
        self.entry_ticks = 0;
        self.idle.begin_entry();
    }
}
