//! A guest's shadow stack, released while its module is idle.
//!
//! A Rust guest keeps the locals it takes the address of, and whatever does not fit in wasm
//! locals, in linear memory below the mutable global its linker names `__stack_pointer`
//! (LLVM's *shadow stack*, which grows down). rustc links wasm32-wasip1 programs stack-first:
//! the stack is `[0, top)`, `top` being the global's initial value, and data, statics and the
//! heap all lie above it. Between entries no wasm frame exists (SPEC.md, "Lifecycle"), so
//! the stack pointer is back at `top` and nothing below it is live; yet the pages an entry
//! touched — about 20 KiB for a kube-runtime controller — stay resident while the module
//! waits for its next event.
//!
//! So when the module loop releases an idle module's fiber stack and code, it releases these
//! pages too: `madvise(MADV_DONTNEED)` on the whole pages inside `[0, stack pointer)` (the
//! pointer as the guest left it, never above `top`). The next entry finds them zero-filled
//! and faults in what it touches. Only what [`prepare`](super::suspend::prepare()) can prove
//! to be stack is released (see [`ShadowStack`]); a guest that kept data below its stack
//! pointer between entries would only lose its own bytes.

use std::io;

use wasmtime::{AsContextMut, Instance, Memory};

use crate::runtime::page_size::page_size;

/// Where a module keeps its shadow stack: below the global named `__stack_pointer` (in the
/// module's name section), a mutable `i32` whose initial value `top` every active data
/// segment starts at or above — a stack-first layout, so nothing but the stack lies in
/// `[0, top)`. [`prepare`](super::suspend::prepare()) finds it; a module laid out otherwise
/// (data below the stack, an unnamed or computed stack pointer) has none and keeps its
/// stack pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShadowStack {
    /// The export name under which the host reads the stack pointer (the module's own, or
    /// the one `prepare` added).
    pub pointer: String,
    /// The top of the stack: the pointer's initial value, in bytes from the start of linear
    /// memory.
    pub top: u32,
}

impl ShadowStack {
    /// The length in bytes of the prefix of linear memory that is dead between entries when
    /// the stack pointer reads `stack_pointer`: `[0, min(stack_pointer, top))`, rounded down
    /// to whole pages of `page` bytes and to the memory's `memory_len` bytes. A negative
    /// pointer counts as 0 (nothing dead), one above `top` as `top`.
    pub fn dead_len(&self, stack_pointer: i32, memory_len: usize, page: usize) -> usize {
        let pointer = u32::try_from(stack_pointer).unwrap_or(0).min(self.top);
        let end = usize::try_from(pointer).unwrap_or(0).min(memory_len);
        end - end % page.max(1)
    }

    /// Releases the dead pages of `instance`'s stack ([`dead_len`](Self::dead_len)) from
    /// `memory`, its linear memory: their next read sees zeros. Returns the bytes released
    /// (0 when none are dead).
    ///
    /// # Errors
    /// The instance has no export [`pointer`](Self::pointer) holding an `i32`, or `madvise`
    /// failed (the memory is then as it was).
    ///
    /// # Safety
    /// No call of the store may be in progress: call it between entries only, where by the
    /// ABI no frame of the guest exists.
    pub unsafe fn release(
        &self,
        mut store: impl AsContextMut,
        instance: &Instance,
        memory: &Memory,
    ) -> io::Result<usize> {
        let mut store = store.as_context_mut();
        let pointer = instance
            .get_global(&mut store, &self.pointer)
            .and_then(|global| global.get(&mut store).i32())
            .ok_or_else(|| io::Error::other(format!("no i32 global export `{}`", self.pointer)))?;
        let len = self.dead_len(pointer, memory.data_size(&store), page_size());
        if len == 0 {
            return Ok(0);
        }
        // SAFETY: `[base, base + len)` lies inside the instance's linear memory, which starts
        // page-aligned (wasmtime maps it); no wasm runs on it (this function's contract) and
        // no Rust reference into it is alive here. Anonymous or private pages read back as
        // zeros, which the guest cannot tell from a stack it has not yet written.
        let released = unsafe {
            libc::madvise(
                memory.data_ptr(&store).cast::<libc::c_void>(),
                len,
                libc::MADV_DONTNEED,
            )
        };
        if released != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(top: u32) -> ShadowStack {
        ShadowStack {
            pointer: "sp".into(),
            top,
        }
    }

    #[test]
    fn the_dead_stack_is_the_whole_pages_below_the_pointer_and_never_above_the_top() {
        let page = 4096;
        let memory = 1 << 20;
        assert_eq!(stack(65536).dead_len(65536, memory, page), 65536);
        assert_eq!(stack(65536).dead_len(65536 - 16, memory, page), 61440);
        assert_eq!(
            stack(65536).dead_len(i32::MAX, memory, page),
            65536,
            "a pointer above the top is the top"
        );
        assert_eq!(stack(65536 + 100).dead_len(i32::MAX, memory, page), 65536);
        assert_eq!(
            stack(65536).dead_len(-4, memory, page),
            0,
            "a negative pointer"
        );
        assert_eq!(stack(65536).dead_len(4095, memory, page), 0);
        assert_eq!(
            stack(65536).dead_len(65536, 8192, page),
            8192,
            "a smaller memory"
        );
    }

    #[test]
    fn released_stack_pages_read_zero_and_the_rest_of_memory_is_kept() {
        let wasm = wat::parse_str(
            r#"(module
                (memory (export "memory") 2)
                (global $__stack_pointer (export "sp") (mut i32) (i32.const 65536))
                (data (i32.const 65536) "data"))"#,
        )
        .expect("test WAT");
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, &wasm).expect("compiles");
        let mut store = wasmtime::Store::new(&engine, ());
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("instantiates");
        let memory = instance.get_memory(&mut store, "memory").expect("memory");
        memory.data_mut(&mut store)[..65536].fill(7);
        let page = page_size();
        let stack = stack(65536);
        // SAFETY: no call of the store is in progress.
        let released = unsafe { stack.release(&mut store, &instance, &memory) }.expect("released");
        assert_eq!(released, 65536 - 65536 % page);
        let data = memory.data(&store);
        assert!(data[..released].iter().all(|b| *b == 0));
        assert!(data[released..65536].iter().all(|b| *b == 7));
        assert_eq!(&data[65536..65540], b"data");

        let missing = ShadowStack {
            pointer: "nope".into(),
            top: 65536,
        };
        // SAFETY: as above.
        assert!(unsafe { missing.release(&mut store, &instance, &memory) }.is_err());
    }
}
