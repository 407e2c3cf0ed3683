//! What a guest must export and import to be run (SPEC.md, "Versioning", "Exports").

use kube_wasm_abi::names::{
    EXPORT_ABI_VERSION, EXPORT_ALLOC, EXPORT_COMPLETE, EXPORT_INITIALIZE, EXPORT_REACTOR_START,
    EXPORT_START, EXPORT_WAKE, IMPORT_MODULE,
};
use kube_wasm_abi::{ABI_MAJOR, ABI_MINOR, unpack_version};
use wasmtime::{AsContextMut, Instance, Memory, Module, TypedFunc};

use super::PROVIDED_IMPORTS;
use super::memory::MEMORY_EXPORT;

/// Why a module cannot run on this host. Every message names the host's ABI version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Incompatible {
    /// No `kube_wasm_abi_version` export.
    #[error(
        "the module does not export `{EXPORT_ABI_VERSION}`, so it was not built for the kube-wasm ABI \
         (this host implements ABI {ABI_MAJOR}.{ABI_MINOR})"
    )]
    MissingVersion,
    /// The module's ABI major version differs from the host's.
    #[error(
        "the module was built for kube-wasm ABI {major}.{minor} but this host implements ABI \
         {ABI_MAJOR}.{ABI_MINOR}: the major versions differ"
    )]
    OtherMajor {
        /// The module's major version.
        major: u16,
        /// The module's minor version.
        minor: u16,
    },
    /// The module's ABI minor version is newer than the host's.
    #[error(
        "the module was built for kube-wasm ABI {major}.{minor} but this host implements only ABI \
         {ABI_MAJOR}.{ABI_MINOR}: upgrade the host"
    )]
    NewerMinor {
        /// The module's major version.
        major: u16,
        /// The module's minor version.
        minor: u16,
    },
    /// The module imports from another major version's import module (e.g. `kube_wasm_v2`).
    #[error(
        "the module imports `{module}::{name}`, from another major version of the kube-wasm ABI \
         (this host implements ABI {ABI_MAJOR}.{ABI_MINOR}, import module `{IMPORT_MODULE}`)"
    )]
    OtherMajorImport {
        /// The import module.
        module: String,
        /// The imported name.
        name: String,
    },
    /// The module imports a `kube_wasm_v1` function this host does not provide.
    #[error(
        "the module imports `{IMPORT_MODULE}::{name}`, which this host (ABI {ABI_MAJOR}.{ABI_MINOR}) \
         does not provide: it needs a newer host"
    )]
    UnknownImport {
        /// The imported name.
        name: String,
    },
    /// The module exports both `_start` and `kube_wasm_start`, or neither (ABI 1.4: a
    /// command or a reactor, one of the two).
    #[error(
        "the module exports {found}: a module is a command (`{EXPORT_START}`) or a reactor \
         (`{EXPORT_REACTOR_START}`, ABI 1.4), one of the two"
    )]
    EntryExports {
        /// What it exports of the two.
        found: &'static str,
    },
    /// A required export is missing or has the wrong type.
    #[error("the module's export `{name}` is missing or has the wrong type ({detail})")]
    BadExport {
        /// The export's name.
        name: &'static str,
        /// What wasmtime said.
        detail: String,
    },
}

/// Checks a module's imports from the `kube_wasm_v*` family before instantiating it, so that
/// a module of another ABI version is refused with a clear message rather than an "unknown
/// import" error.
///
/// # Errors
/// [`Incompatible::OtherMajorImport`] or [`Incompatible::UnknownImport`].
pub fn check_imports(module: &Module) -> Result<(), Incompatible> {
    for import in module.imports() {
        let (from, name) = (import.module(), import.name());
        if from == IMPORT_MODULE {
            if !PROVIDED_IMPORTS.contains(&name) {
                return Err(Incompatible::UnknownImport { name: name.into() });
            }
        } else if from.starts_with("kube_wasm_v") {
            return Err(Incompatible::OtherMajorImport {
                module: from.into(),
                name: name.into(),
            });
        }
    }
    Ok(())
}

/// Checks the value the guest's `kube_wasm_abi_version` returned: the same major version
/// and a minor version no greater than the host's.
///
/// # Errors
/// [`Incompatible::OtherMajor`] or [`Incompatible::NewerMinor`].
pub fn check_version(packed: u32) -> Result<(), Incompatible> {
    let (major, minor) = unpack_version(packed);
    if major != ABI_MAJOR {
        Err(Incompatible::OtherMajor { major, minor })
    } else if minor > ABI_MINOR {
        Err(Incompatible::NewerMinor { major, minor })
    } else {
        Ok(())
    }
}

/// The guest's exports the host calls, resolved once after instantiation.
#[derive(Clone)]
pub struct GuestExports {
    /// The linear memory completions are written into.
    pub memory: Memory,
    /// `kube_wasm_abi_version() -> i32`.
    pub abi_version: TypedFunc<(), i32>,
    /// `kube_wasm_alloc(len) -> ptr`.
    pub alloc: TypedFunc<i32, i32>,
    /// `kube_wasm_complete(op, ptr, len)`.
    pub complete: TypedFunc<(i64, i32, i32), ()>,
    /// How the module is started and woken.
    pub entry: Entry,
}

/// How a module is entered besides `kube_wasm_complete` (SPEC.md, "Exports").
#[derive(Clone)]
pub enum Entry {
    /// A command module: `_start()`.
    Command {
        /// `_start()`.
        start: TypedFunc<(), ()>,
    },
    /// A reactor module (ABI 1.4): `_initialize()` if it has it, then `kube_wasm_start()`;
    /// `kube_wasm_wake()` at its next timer.
    Reactor {
        /// `_initialize()`, if exported.
        initialize: Option<TypedFunc<(), ()>>,
        /// `kube_wasm_start()`.
        start: TypedFunc<(), ()>,
        /// `kube_wasm_wake()`.
        wake: TypedFunc<(), ()>,
    },
}

impl GuestExports {
    /// Looks up and type-checks every export the ABI requires.
    ///
    /// # Errors
    /// [`Incompatible::MissingVersion`] first if `kube_wasm_abi_version` is absent, else
    /// [`Incompatible::BadExport`] for the first missing or mistyped export.
    pub fn resolve(
        mut store: impl AsContextMut,
        instance: &Instance,
    ) -> Result<Self, Incompatible> {
        let mut store = store.as_context_mut();
        if instance
            .get_export(&mut store, EXPORT_ABI_VERSION)
            .is_none()
        {
            return Err(Incompatible::MissingVersion);
        }
        let abi_version = typed(&mut store, instance, EXPORT_ABI_VERSION)?;
        let alloc = typed(&mut store, instance, EXPORT_ALLOC)?;
        let complete = typed(&mut store, instance, EXPORT_COMPLETE)?;
        let entry = match (
            exports(&mut store, instance, EXPORT_START),
            exports(&mut store, instance, EXPORT_REACTOR_START),
        ) {
            (true, false) => Entry::Command {
                start: typed(&mut store, instance, EXPORT_START)?,
            },
            (false, true) => Entry::Reactor {
                initialize: if exports(&mut store, instance, EXPORT_INITIALIZE) {
                    Some(typed(&mut store, instance, EXPORT_INITIALIZE)?)
                } else {
                    None
                },
                start: typed(&mut store, instance, EXPORT_REACTOR_START)?,
                wake: typed(&mut store, instance, EXPORT_WAKE)?,
            },
            (true, true) => {
                return Err(Incompatible::EntryExports {
                    found: "both `_start` and `kube_wasm_start`",
                });
            }
            (false, false) => {
                return Err(Incompatible::EntryExports {
                    found: "neither `_start` nor `kube_wasm_start`",
                });
            }
        };
        let memory = instance
            .get_memory(&mut store, MEMORY_EXPORT)
            .ok_or_else(|| Incompatible::BadExport {
                name: MEMORY_EXPORT,
                detail: "no memory export".into(),
            })?;
        Ok(Self {
            memory,
            abi_version,
            alloc,
            complete,
            entry,
        })
    }
}

/// Whether `instance` has an export `name`.
fn exports(store: impl AsContextMut, instance: &Instance, name: &str) -> bool {
    instance.get_export(store, name).is_some()
}

fn typed<P, R>(
    store: impl AsContextMut,
    instance: &Instance,
    name: &'static str,
) -> Result<TypedFunc<P, R>, Incompatible>
where
    P: wasmtime::WasmParams,
    R: wasmtime::WasmResults,
{
    instance
        .get_typed_func::<P, R>(store, name)
        .map_err(|e| Incompatible::BadExport {
            name,
            detail: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_wasm_abi::{ABI_VERSION, pack_version};

    #[test]
    fn versions_are_checked_as_the_spec_says() {
        let ours = format!("ABI {ABI_MAJOR}.{ABI_MINOR}");
        assert_eq!(check_version(ABI_VERSION), Ok(()));
        assert_eq!(
            check_version(pack_version(ABI_MAJOR, 0)),
            Ok(()),
            "a module of an older minor version runs"
        );
        let other = check_version(pack_version(2, 0)).expect_err("major differs");
        assert_eq!(other, Incompatible::OtherMajor { major: 2, minor: 0 });
        let text = other.to_string();
        assert!(text.contains("ABI 2.0") && text.contains(&ours), "{text}");
        let newer = check_version(pack_version(ABI_MAJOR, ABI_MINOR + 1)).expect_err("too new");
        let text = newer.to_string();
        let theirs = format!("ABI {ABI_MAJOR}.{}", ABI_MINOR + 1);
        assert!(text.contains(&theirs) && text.contains(&ours), "{text}");
        assert!(check_version(0).is_err(), "a zero version is major 0");
    }
}
