//! The WASI preview 1 context of one module (SPEC.md, "Environment"): its environment,
//! arguments and stdio. Nothing is inherited from the host process: no environment variable,
//! no preopened directory, no socket; stdin is closed.

use std::sync::Arc;

use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p1::WasiP1Ctx;

use crate::runtime::output::{OutputTarget, PrefixedOutput, Stream};
use crate::runtime::quota::LogGate;

pub use kube_wasm_abi::env::{ENV_CLUSTER_URL, ENV_DEFAULT_NAMESPACE, ENV_MODULE};

/// The environment of module `name`: the three `KUBE_WASM_*` variables, then the configured
/// `extra` pairs in order, a later pair replacing an earlier one of the same key (so a
/// module's own variables override the host-wide `--env` ones). An extra pair cannot
/// override a `KUBE_WASM_*` variable the host sets (it is left out, with a warning).
pub fn module_env<'a>(
    name: &str,
    namespace: &str,
    cluster_url: &str,
    extra: impl IntoIterator<Item = &'a (String, String)>,
) -> Vec<(String, String)> {
    let mut env = vec![
        (ENV_MODULE.to_owned(), name.to_owned()),
        (ENV_DEFAULT_NAMESPACE.to_owned(), namespace.to_owned()),
        (ENV_CLUSTER_URL.to_owned(), cluster_url.to_owned()),
    ];
    let host_set = env.len();
    for (key, value) in extra {
        if let Some(index) = env.iter().position(|(k, _)| k == key) {
            if index < host_set {
                tracing::warn!(
                    module = name,
                    "environment variable {key} is ignored: the host sets it"
                );
            } else {
                env[index].1.clone_from(value);
            }
            continue;
        }
        env.push((key.clone(), value.clone()));
    }
    env
}

/// Builds the WASI context of module `name`: `argv` is the name then `args`, the environment
/// is `env`, stdout and stderr are prefixed with `[name] `, pass `log_gate` (the module's
/// log-lines quota) together, and go to `output`.
pub fn module_wasi(
    name: &str,
    args: &[String],
    env: &[(String, String)],
    output: &OutputTarget,
    log_gate: Arc<LogGate>,
) -> WasiP1Ctx {
    let argv: Vec<&str> = std::iter::once(name)
        .chain(args.iter().map(String::as_str))
        .collect();
    WasiCtxBuilder::new()
        .args(&argv)
        .envs(env)
        .stdout(PrefixedOutput::new(
            name,
            Stream::Stdout,
            output.clone(),
            Some(log_gate.clone()),
        ))
        .stderr(PrefixedOutput::new(
            name,
            Stream::Stderr,
            output.clone(),
            Some(log_gate),
        ))
        .build_p1()
}
