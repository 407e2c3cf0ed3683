//! The WASI environment variables the host sets for every module (SPEC.md, "Environment").
//!
//! They stand in for what a native kube client finds on its machine: the kubeconfig's (or the
//! pod's) default namespace and API server URL, and the hostname kube-runtime uses as an
//! instance name. No credential is ever among them.

/// The prefix of every variable the host sets, reserved for the host: `host-shim` refuses a
/// manifest `env` key that starts with it, and never lets a configured variable replace one
/// it sets.
pub const ENV_PREFIX: &str = "KUBE_WASM_";

/// `KUBE_WASM_MODULE`: the module's name in the host. kube-runtime's event `Reporter` uses it
/// as the instance name where a native controller uses the hostname (`$HOSTNAME`).
pub const ENV_MODULE: &str = "KUBE_WASM_MODULE";

/// `KUBE_WASM_DEFAULT_NAMESPACE`: the module's default namespace, what kube's
/// `Config::default_namespace` is natively (the kubeconfig context's namespace, or the pod's
/// service-account namespace in a cluster): `host-shim` sets the module's manifest
/// `namespace`, else the default namespace of its own kube `Config`. A guest reads unset or
/// empty as `default`, as kube does for a context without a namespace.
pub const ENV_DEFAULT_NAMESPACE: &str = "KUBE_WASM_DEFAULT_NAMESPACE";

/// `KUBE_WASM_CLUSTER_URL`: the API server URL of the host's kube `Config` (kube's
/// `Config::cluster_url`), for information only: the guest never connects to it.
pub const ENV_CLUSTER_URL: &str = "KUBE_WASM_CLUSTER_URL";

/// Every variable the host sets for every module, in SPEC.md's order.
pub const HOST_ENV: &[&str] = &[ENV_MODULE, ENV_DEFAULT_NAMESPACE, ENV_CLUSTER_URL];
