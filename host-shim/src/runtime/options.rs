//! What one module runs with beyond its wasm: its environment, arguments, default namespace,
//! memory cap, restart policy, identity, permissions and suspend policy (a manifest entry; see
//! [`crate::fleet::manifest`]).

use std::path::PathBuf;

use crate::runtime::quota::Quotas;
use crate::runtime::restart::RestartPolicy;
use crate::runtime::suspend::SuspendPolicy;
use crate::upstream::identity::ServiceAccount;
use crate::upstream::permissions::Permissions;

/// Per-module options. The default is what `host-shim run MODULE.wasm…` gives every module:
/// no extra arguments or environment, the kubeconfig's namespace, no memory cap beyond the
/// engine's, never restarted, never suspended, the default quotas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleOptions {
    /// Arguments after argv\[0\] (which is the module's name).
    pub args: Vec<String>,
    /// Environment variables of this module, after the host-wide ones (`--env`), which they
    /// override. `KUBE_WASM_*` variables set by the host cannot be overridden.
    pub env: Vec<(String, String)>,
    /// The module's default namespace (`KUBE_WASM_DEFAULT_NAMESPACE`, what
    /// `Client::default_namespace` returns in the guest); `None`: the kubeconfig's.
    pub namespace: Option<String>,
    /// The most bytes its linear memory may grow to; growing past it ends the module.
    pub memory_limit: Option<usize>,
    /// When the module is started again after it ended.
    pub restart: RestartPolicy,
    /// The ServiceAccount it acts as (see [`crate::upstream::identity`]); `None`: the host's own
    /// identity.
    pub service_account: Option<ServiceAccount>,
    /// What it may do (see [`crate::upstream::permissions`]); `None`: anything its identity may.
    pub permissions: Option<Permissions>,
    /// When it is suspended to disk while idle (see [`crate::runtime::suspend`]); `None`: never.
    pub suspend: Option<SuspendPolicy>,
    /// What it may make the host hold at once (see [`crate::runtime::quota`]).
    pub quotas: Quotas,
}

impl Default for ModuleOptions {
    fn default() -> Self {
        Self {
            args: Vec::new(),
            env: Vec::new(),
            namespace: None,
            memory_limit: None,
            restart: RestartPolicy::Never,
            service_account: None,
            permissions: None,
            suspend: None,
            quotas: Quotas::default(),
        }
    }
}

/// One module to run: its name in the host, where its wasm comes from and its options — what
/// a manifest entry and a `MODULE.wasm` argument of the command line both become.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSpec {
    /// Its name in the host: output prefix, `KUBE_WASM_MODULE`, argv\[0\].
    pub name: String,
    /// Where its wasm comes from.
    pub source: ModuleSource,
    /// What it runs with.
    pub options: ModuleOptions,
}

/// Where a module's wasm comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleSource {
    /// A `.wasm` file the host reads.
    File(PathBuf),
    /// An OCI image reference (by tag or digest) the host pulls (see
    /// [`crate::fleet::oci`]).
    Image(String),
}
