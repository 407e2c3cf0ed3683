//! The host function the instrumented modules call ([`super::instrument`]).

use wasmtime::{Caller, Linker};

use super::instrument::{IMPORT_MODULE, IMPORT_NAME};
use crate::runtime::state::HostState;

/// Adds the import the instrumented modules call to `linker`: it records the slot in the
/// module's profile, if it is being profiled, and returns it. Any module may import it; it
/// only ever records into its own module's profile.
///
/// # Errors
/// If the import is already defined.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        IMPORT_MODULE,
        IMPORT_NAME,
        |caller: Caller<'_, HostState>, slot: i32| -> i32 {
            if let Some(profile) = &caller.data().func_ref_profile {
                profile.mark(slot as u32);
            }
            slot
        },
    )?;
    Ok(())
}
