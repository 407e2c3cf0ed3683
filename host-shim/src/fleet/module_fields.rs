//! The fields that say how a module runs, shared by a manifest entry and a WasmController's spec
//! (see [`crate::fleet::manifest`] and [`crate::fleet::wasm_controller`]): their shapes, and
//! one validation with one set of messages, each naming the field (`AT.memory: …`).

use std::collections::BTreeMap;

use kube_wasm_abi::env::ENV_PREFIX;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fleet::units::{parse_duration, parse_size};
use crate::runtime::options::ModuleOptions;
use crate::runtime::quota::Quotas;
use crate::runtime::restart::RestartPolicy;
use crate::runtime::suspend::SuspendPolicy;
use crate::upstream::permissions::{Permissions, Rule, VERBS};

/// The memory cap of a module that sets no `memory`: 256 MiB.
pub const DEFAULT_MEMORY_LIMIT: u64 = 256 << 20;
/// The smallest memory cap: one wasm page (64 KiB).
pub const MIN_MEMORY_LIMIT: u64 = 64 << 10;
/// The largest memory cap: all a wasm32 module can address (4 GiB).
pub const MAX_MEMORY_LIMIT: u64 = 4 << 30;

/// How a module runs, as written: environment, arguments, memory cap, restart policy,
/// permissions, suspend policy and quotas.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFields {
    /// `env`: string values only.
    pub env: BTreeMap<String, String>,
    /// `args`: argv after the module name.
    pub args: Vec<String>,
    /// `memory`: a size such as `64Mi`.
    pub memory: Option<String>,
    /// `restartPolicy`: `Always`, `OnFailure` or `Never`.
    pub restart_policy: Option<String>,
    /// `permissions`.
    pub permissions: Option<Vec<RuleSpec>>,
    /// `suspend`.
    pub suspend: Option<SuspendSpec>,
    /// `quotas`.
    pub quotas: Option<QuotasSpec>,
}

impl RunFields {
    /// Validates the fields of the module at `at` (e.g. `modules[3] (mirror-a)`), pushing one
    /// message per problem to `problems`, and returns the options they give (the module's
    /// namespace and identity are the caller's).
    pub fn validate(self, at: &str, problems: &mut Vec<String>) -> ModuleOptions {
        let raw = self;
        for key in raw.env.keys() {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                problems.push(format!(
                    "{at}.env: {key:?} is not a variable name (empty, or has `=` or NUL)"
                ));
            } else if key.starts_with(ENV_PREFIX) {
                problems.push(format!(
                    "{at}.env.{key}: the host sets {ENV_PREFIX}* variables (use `namespace` for the default namespace)"
                ));
            }
        }
        for (key, value) in &raw.env {
            if value.contains('\0') {
                problems.push(format!("{at}.env.{key}: contains a NUL byte"));
            }
        }
        if raw.args.iter().any(|a| a.contains('\0')) {
            problems.push(format!("{at}.args: an argument contains a NUL byte"));
        }
        let memory_limit = match raw.memory.as_deref().map(parse_size) {
            None => DEFAULT_MEMORY_LIMIT,
            Some(Ok(bytes)) if (MIN_MEMORY_LIMIT..=MAX_MEMORY_LIMIT).contains(&bytes) => bytes,
            Some(Ok(bytes)) => {
                problems.push(format!(
                    "{at}.memory: {bytes} bytes is outside 64Ki (one wasm page) ..= 4Gi (all a wasm32 module addresses)"
                ));
                DEFAULT_MEMORY_LIMIT
            }
            Some(Err(e)) => {
                problems.push(format!("{at}.memory: {e}"));
                DEFAULT_MEMORY_LIMIT
            }
        };
        let restart = match raw.restart_policy.as_deref().map(str::parse) {
            None => RestartPolicy::OnFailure,
            Some(Ok(policy)) => policy,
            Some(Err(e)) => {
                problems.push(format!("{at}.restartPolicy: {e}"));
                RestartPolicy::OnFailure
            }
        };
        let permissions = raw.permissions.map(|rules| Permissions {
            rules: rules
                .into_iter()
                .enumerate()
                .map(|(i, rule)| validate_rule(rule, &format!("{at}.permissions[{i}]"), problems))
                .collect(),
        });
        let suspend = raw
            .suspend
            .and_then(|suspend| match parse_duration(&suspend.idle_after) {
                Ok(d) if d.is_zero() => {
                    problems.push(format!("{at}.suspend.idleAfter: must be more than zero"));
                    None
                }
                Ok(d) => Some(
                    SuspendPolicy::after(d)
                        .between_timers(suspend.between_timers.unwrap_or(true))
                        .cost_factor(
                            suspend
                                .cost_factor
                                .unwrap_or(SuspendPolicy::DEFAULT_COST_FACTOR),
                        ),
                ),
                Err(e) => {
                    problems.push(format!("{at}.suspend.idleAfter: {e}"));
                    None
                }
            });
        let quotas = raw
            .quotas
            .map(|quotas| validate_quotas(quotas, &format!("{at}.quotas"), problems))
            .unwrap_or_default();

        ModuleOptions {
            env: raw.env.into_iter().collect(),
            args: raw.args,
            memory_limit: Some(usize::try_from(memory_limit).unwrap_or(usize::MAX)),
            restart,
            permissions,
            suspend,
            quotas,
            ..ModuleOptions::default()
        }
    }
}

/// A module's `quotas`: what it may make the host hold at once (the host's
/// [`Quotas`]); every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct QuotasSpec {
    /// Live operations of every kind (default 1024; 1 to 1048576).
    pub pending_ops: Option<u64>,
    /// Requests in flight (default 64; 1 to 1048576).
    pub concurrent_requests: Option<u64>,
    /// Watches open (default 64; 1 to 1048576).
    pub watches: Option<u64>,
    /// Websockets open (default 16; 1 to 1048576).
    pub streams: Option<u64>,
    /// Bytes buffered for the module — bodies in flight, responses being collected,
    /// completions not yet taken — a size (default `64Mi`; `64Ki` to `4Gi` less one byte).
    pub buffered_bytes: Option<String>,
    /// Lines of stdout and stderr a second, with bursts of ten seconds' worth (default 100);
    /// excess lines are dropped and announced.
    pub log_lines_per_second: Option<u32>,
}

/// A module's `suspend` policy: suspended to disk after `idleAfter` (a duration such as `30s`)
/// idle; with `betweenTimers` (default `true`) its timers do not count as activity, and it is
/// suspended between them and resumed just ahead of each (see
/// [`SuspendPolicy`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SuspendSpec {
    /// How long the module must go without an entry, with no completion waiting, before it
    /// is suspended: a duration such as `30s` (doubled, up to ×16, for a module woken sooner
    /// than this after a suspend).
    pub idle_after: String,
    /// Whether timers are foreseen (default `true`): only watch events, stream messages and
    /// the stop signal count against idleness, and the module is suspended between timers at
    /// least `min(idleAfter, 500ms)` apart and resumed just ahead of each.
    pub between_timers: Option<bool>,
    /// Between timers, suspended only if the next timer is at least this many times the
    /// host's average suspend-and-resume time away (default 250: suspending costs at most
    /// 0.4 % of a core, and a host slowed by load suspends less); 0: timers alone decide.
    pub cost_factor: Option<u32>,
}

/// One rule of a module's `permissions` allowlist (RBAC's shape: `verbs`, `apiGroups` — default
/// `[""]`, the core group — and `resources`, `name/subresource` allowed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuleSpec {
    /// The verbs allowed: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, or `*`.
    pub verbs: Vec<String>,
    /// The API groups (default `[""]`, the core group; `*` for all).
    pub api_groups: Option<Vec<String>>,
    /// The resources, plural and lower case, or `resource/subresource`; `*` for all.
    pub resources: Vec<String>,
}

/// The smallest `bufferedBytes` quota: room for the completions of an ordinary op.
const MIN_BUFFERED_BYTES: u64 = 64 * 1024;

/// The largest count quota (ops, watches, streams): more is no bound at all.
const MAX_COUNT_QUOTA: u64 = 1 << 20;

pub(crate) fn validate_quotas(raw: QuotasSpec, at: &str, problems: &mut Vec<String>) -> Quotas {
    let defaults = Quotas::default();
    let mut count = |field: &str, value: Option<u64>, default: usize| match value {
        None => default,
        Some(n) if (1..=MAX_COUNT_QUOTA).contains(&n) => n as usize,
        Some(n) => {
            problems.push(format!(
                "{at}.{field}: {n} is outside 1 ..= {MAX_COUNT_QUOTA}"
            ));
            default
        }
    };
    let pending_ops = count("pendingOps", raw.pending_ops, defaults.pending_ops);
    let concurrent_requests = count(
        "concurrentRequests",
        raw.concurrent_requests,
        defaults.concurrent_requests,
    );
    let watches = count("watches", raw.watches, defaults.watches);
    let streams = count("streams", raw.streams, defaults.streams);
    let buffered_bytes = match raw.buffered_bytes.as_deref().map(parse_size) {
        None => defaults.buffered_bytes,
        Some(Ok(bytes)) if (MIN_BUFFERED_BYTES..=u64::from(u32::MAX)).contains(&bytes) => {
            bytes as usize
        }
        Some(Ok(bytes)) => {
            problems.push(format!(
                "{at}.bufferedBytes: {bytes} bytes is outside 64Ki ..= 4Gi - 1"
            ));
            defaults.buffered_bytes
        }
        Some(Err(e)) => {
            problems.push(format!("{at}.bufferedBytes: {e}"));
            defaults.buffered_bytes
        }
    };
    Quotas {
        pending_ops,
        concurrent_requests,
        watches,
        streams,
        buffered_bytes,
        log_lines_per_second: raw
            .log_lines_per_second
            .unwrap_or(defaults.log_lines_per_second),
    }
}

pub(crate) fn validate_rule(raw: RuleSpec, at: &str, problems: &mut Vec<String>) -> Rule {
    if raw.verbs.is_empty() {
        problems.push(format!("{at}.verbs: lists no verb"));
    }
    for verb in &raw.verbs {
        if verb != "*" && !VERBS.contains(&verb.as_str()) {
            problems.push(format!(
                "{at}.verbs: {verb:?} is not a verb (one of {}, or *)",
                VERBS.join(", ")
            ));
        }
    }
    if raw.resources.is_empty() {
        problems.push(format!("{at}.resources: lists no resource"));
    }
    for resource in &raw.resources {
        let parts: Vec<&str> = resource.split('/').collect();
        let valid = match parts.as_slice() {
            ["*"] => true,
            [r] => is_resource_name(r),
            [r, sub] => (*r == "*" || is_resource_name(r)) && is_resource_name(sub),
            _ => false,
        };
        if !valid {
            problems.push(format!(
                "{at}.resources: {resource:?} is not a resource (`name`, `name/subresource`, `*` or `*/subresource`; lowercase)"
            ));
        }
    }
    let api_groups = raw.api_groups.unwrap_or_else(|| vec![String::new()]);
    for group in &api_groups {
        if group != "*" && !group.is_empty() && check_dns_subdomain(group).is_err() {
            problems.push(format!(
                "{at}.apiGroups: {group:?} is not an API group (\"\" for the core group, a DNS name, or *)"
            ));
        }
    }
    Rule {
        verbs: raw.verbs,
        api_groups,
        resources: raw.resources,
    }
}

fn is_resource_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
}

/// Checks an RFC 1123 subdomain, as Kubernetes does for most object names: at most 253
/// characters, dot-separated labels of lowercase letters, digits and `-`.
pub(crate) fn check_dns_subdomain(name: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.chars().all(ok_char)
        && name
            .split('.')
            .all(|label| !label.is_empty() && !label.starts_with('-') && !label.ends_with('-'));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a DNS subdomain (a-z, 0-9, `-` and `.`, at most 253)"
        ))
    }
}

/// Checks an RFC 1123 label, as Kubernetes does for namespace names: 1 to 63 characters,
/// lowercase letters, digits and `-`, starting and ending with a letter or digit.
pub(crate) fn check_dns_label(name: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    let valid = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(ok_char)
        && !name.starts_with('-')
        && !name.ends_with('-');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a DNS label (1-63 of a-z, 0-9 and `-`, starting and ending with a letter or digit)"
        ))
    }
}
