//! A compiled module ready to run: its name in the host, its options, and its
//! pre-instantiation.

use std::fmt;
use std::sync::Arc;

use wasmtime::{InstancePre, Linker};

use super::outcome::ModuleError;
use crate::runtime::abi::exports::check_imports;
use crate::runtime::idle_code::Code;
use crate::runtime::options::ModuleOptions;
use crate::runtime::state::HostState;
use crate::runtime::suspend::Suspendable;

/// A compiled module with its name in the host and its options, ready to run (and to run
/// again: the module is pre-instantiated once, see [`InstancePre`]). Cheap to clone, and one
/// pointer wide: every layer of a module's task (supervisor, run, loop) holds one.
#[derive(Clone)]
pub struct LoadedModule(Arc<Loaded>);

#[derive(Clone)]
struct Loaded {
    name: String,
    module: wasmtime::Module,
    /// Its compiled code: who runs it, and whether it can be released while no one does.
    code: Arc<Code>,
    /// The module with its imports resolved against the host's linker, or why that failed.
    pre: Result<InstancePre<HostState>, ModuleError>,
    /// Whether its instances can be suspended to disk.
    suspendable: Suspendable,
    options: ModuleOptions,
}

impl fmt::Debug for LoadedModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedModule")
            .field("name", &self.0.name)
            .finish_non_exhaustive()
    }
}

impl LoadedModule {
    /// `module` under `name`, its imports resolved against `linker` (or why they could not
    /// be), with default options; `file_backed`: it was deserialised from a cache file, so
    /// its code can be released while idle.
    pub(crate) fn new(
        name: &str,
        module: wasmtime::Module,
        linker: &Linker<HostState>,
        suspendable: Suspendable,
        file_backed: bool,
    ) -> Self {
        let pre = check_imports(&module)
            .map_err(ModuleError::from)
            .and_then(|()| {
                linker
                    .instantiate_pre(&module)
                    .map_err(|e| ModuleError::Instantiate(format!("{e:?}")))
            });
        Self(Arc::new(Loaded {
            name: name.to_owned(),
            code: Arc::new(Code::new(&module, file_backed)),
            module,
            pre,
            suspendable,
            options: ModuleOptions::default(),
        }))
    }

    /// The same compiled module under another `name` with other `options` (shares the
    /// compiled code and the pre-instantiation).
    pub fn named(&self, name: &str, options: ModuleOptions) -> Self {
        Self(Arc::new(Loaded {
            name: name.to_owned(),
            options,
            ..(*self.0).clone()
        }))
    }

    /// This module with `options`.
    pub fn with_options(self, options: ModuleOptions) -> Self {
        Self(Arc::new(Loaded {
            options,
            ..(*self.0).clone()
        }))
    }

    /// Its options.
    pub fn options(&self) -> &ModuleOptions {
        &self.0.options
    }

    /// Whether `other` shares this module's compiled code.
    pub fn shares_code_with(&self, other: &LoadedModule) -> bool {
        wasmtime::Module::same(&self.0.module, &other.0.module)
    }

    /// The module's name in the host (the prefix of its output, `KUBE_WASM_MODULE`).
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Whether its instances can be suspended to disk, found when it was loaded.
    pub fn suspendable(&self) -> &Suspendable {
        &self.0.suspendable
    }

    /// Its compiled code, shared with every module of the same wasm.
    pub(crate) fn code(&self) -> &Arc<Code> {
        &self.0.code
    }

    /// How many times its compiled code (shared with every module of the same wasm) was
    /// released while no instance ran it (see [`crate::runtime::idle_code`]).
    pub fn code_releases(&self) -> u64 {
        self.0.code.releases()
    }

    /// The module with its imports resolved, or why it cannot be instantiated.
    pub(super) fn pre(&self) -> Result<&InstancePre<HostState>, &ModuleError> {
        self.0.pre.as_ref()
    }
}
