//! A compiled module ready to run: its name in the host, its options, and its
//! pre-instantiation.

use std::fmt;
use std::fs::File;
use std::sync::Arc;

use wasmtime::{Engine, Linker};

use super::compiled::Compiled;
use crate::runtime::func_refs::FuncRefProfile;
use crate::runtime::options::ModuleOptions;
use crate::runtime::state::HostState;
use crate::runtime::suspend::Suspendable;

/// A compiled module with its name in the host and its options, ready to run (and to run
/// again: the module is pre-instantiated, see [`wasmtime::InstancePre`], and kept in memory
/// while an instance holds it). Cheap to clone, and one pointer wide: every layer of a
/// module's task (supervisor, run, loop) holds one.
#[derive(Clone)]
pub struct LoadedModule(Arc<Loaded>);

#[derive(Clone)]
struct Loaded {
    name: String,
    /// The compiled module, shared with every module of the same wasm.
    compiled: Arc<Compiled>,
    /// Whether its instances can be suspended to disk.
    suspendable: Suspendable,
    /// The profile its instances report into, if it is the instrumented form of its wasm
    /// (see [`crate::runtime::func_refs`]); shared like `compiled`.
    profile: Option<Arc<FuncRefProfile>>,
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
    /// be), with default options; `file`: the cache file it maps, which lets it be dropped
    /// while no instance holds it (see [`crate::runtime::cache::Deserialised`]); `profile`: the profile its instances report
    /// into, if `module` is an instrumented form (see [`crate::runtime::func_refs`]).
    pub(crate) fn new(
        name: &str,
        engine: &Engine,
        module: &wasmtime::Module,
        file: Option<File>,
        linker: &Arc<Linker<HostState>>,
        suspendable: Suspendable,
        profile: Option<Arc<FuncRefProfile>>,
    ) -> Self {
        Self(Arc::new(Loaded {
            name: name.to_owned(),
            compiled: Compiled::new(engine, linker, module, file),
            suspendable,
            profile,
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
        Arc::ptr_eq(&self.0.compiled, &other.0.compiled)
    }

    /// The module's name in the host (the prefix of its output, `KUBE_WASM_MODULE`).
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Whether its instances can be suspended to disk, found when it was loaded.
    pub fn suspendable(&self) -> &Suspendable {
        &self.0.suspendable
    }

    /// The func-ref profile its instances report into, while its wasm is being profiled
    /// (see [`crate::runtime::func_refs`]); shared with every module of the same wasm.
    pub fn func_ref_profile(&self) -> Option<&Arc<FuncRefProfile>> {
        self.0.profile.as_ref()
    }

    /// Its compiled module, shared with every module of the same wasm.
    pub(super) fn compiled(&self) -> &Arc<Compiled> {
        &self.0.compiled
    }

    /// How many times its compiled module (shared with every module of the same wasm) was
    /// mapped again from its cache file after no instance held it (see
    /// [`crate::runtime::module`], "Unmapped modules").
    pub fn module_loads(&self) -> u64 {
        self.0.compiled.loads()
    }

    /// Whether its compiled module is in memory now (it is not while no instance holds it,
    /// if it came from the cache).
    pub fn is_mapped(&self) -> bool {
        self.0.compiled.is_mapped()
    }
}
