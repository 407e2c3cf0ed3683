//! Bounds-checked access to a guest's linear memory. `ptr` and `len` are `i32` wasm values
//! read as unsigned byte addresses and counts (SPEC.md, "Types"); nothing here panics, whatever
//! the values.

use std::ops::Range;

use wasmtime::{AsContextMut, Caller, Extern, Memory};

use super::BadAbiCall;
use crate::runtime::state::HostState;

/// The name of the memory export every wasm32-wasip1 module has.
pub const MEMORY_EXPORT: &str = "memory";

/// The byte range `ptr .. ptr + len` if it lies inside a memory of `memory_len` bytes.
///
/// # Errors
/// A description of the problem if the range overflows or leaves the memory.
pub fn guest_range(ptr: i32, len: i32, memory_len: usize) -> Result<Range<usize>, String> {
    let (start, count) = (ptr as u32, len as u32);
    let Some(end) = start.checked_add(count) else {
        return Err(format!(
            "{count} bytes at {start:#x} overflow the 32-bit address space"
        ));
    };
    let (start, end) = (start as usize, end as usize);
    if end > memory_len {
        return Err(format!(
            "{count} bytes at {start:#x} (up to {end:#x}) are outside linear memory of {memory_len} bytes"
        ));
    }
    Ok(start..end)
}

/// Copies `len` bytes at `ptr` out of the calling guest's memory.
///
/// # Errors
/// A [`BadAbiCall`] naming `import` if the guest exports no memory or the range is out of
/// bounds.
pub fn read_guest_bytes(
    caller: &mut Caller<'_, HostState>,
    import: &'static str,
    ptr: i32,
    len: i32,
) -> Result<Vec<u8>, BadAbiCall> {
    let Some(Extern::Memory(memory)) = caller.get_export(MEMORY_EXPORT) else {
        return Err(BadAbiCall::new(import, "the module exports no `memory`"));
    };
    let data = memory.data(&*caller);
    let range =
        guest_range(ptr, len, data.len()).map_err(|reason| BadAbiCall::new(import, reason))?;
    Ok(data[range].to_vec())
}

/// Writes `bytes` at `ptr` into guest memory (a buffer the guest returned from
/// `kube_wasm_alloc`).
///
/// # Errors
/// A description of the problem if the buffer is not inside the memory.
pub fn write_guest_bytes(
    mut store: impl AsContextMut,
    memory: Memory,
    ptr: i32,
    bytes: &[u8],
) -> Result<(), String> {
    let data = memory.data_mut(&mut store);
    let len = i32::try_from(bytes.len())
        .map_err(|_| format!("{} bytes do not fit in wasm32", bytes.len()))?;
    let range = guest_range(ptr, len, data.len())?;
    data[range].copy_from_slice(bytes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_inside_memory_are_accepted() {
        assert_eq!(guest_range(0, 0, 0), Ok(0..0));
        assert_eq!(guest_range(16, 4, 20), Ok(16..20));
        assert_eq!(guest_range(20, 0, 20), Ok(20..20));
    }

    #[test]
    fn ranges_outside_memory_or_overflowing_are_refused() {
        assert!(guest_range(17, 4, 20).is_err());
        assert!(guest_range(21, 0, 20).is_err());
        // Negative i32 values are large unsigned addresses and lengths.
        assert!(guest_range(-1, 1, 65536).is_err());
        assert!(guest_range(0, -1, 65536).is_err());
        // ptr + len overflows 32 bits (and, read as i32, looks small).
        assert!(guest_range(-16, 32, 65536).is_err());
        let err = guest_range(-16, 32, 65536).expect_err("overflows");
        assert!(err.contains("overflow"), "{err}");
        let err = guest_range(i32::MAX, i32::MAX, 1 << 20).expect_err("out of bounds");
        assert!(err.contains("outside linear memory"), "{err}");
    }
}
