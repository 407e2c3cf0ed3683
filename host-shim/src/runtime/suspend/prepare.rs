//! The load-time check and rewrite that make a module suspendable (see [`super`]).
//!
//! Between entries a module is its linear memory, its globals and its tables. wasmtime reads
//! and writes exported globals only, and Rust modules keep `__stack_pointer` (and a few more)
//! in globals they do not export; so before compiling, [`prepare`] adds an export
//! `__kube_wasm_global_<index>` for every mutable global that has none. Every other byte of
//! the module is kept: all sections but the export section are copied as they are, and the
//! export section keeps its entries byte for byte and gains the new ones at its end.
//!
//! The same pass checks that a snapshot of memory and mutable globals is the whole state,
//! i.e. that nothing the module can do at run time escapes it. A module is not suspendable
//! (and is left unchanged) when it:
//! - is not a core module (a component), has no or several linear memories, or imports its
//!   memory, or its memory is shared;
//! - has a start function (it would run again when the instance is re-created at resume);
//! - imports a mutable global, or has a mutable global that is shared or holds a reference;
//! - uses an instruction that changes state outside memory and globals: `table.set`,
//!   `table.grow`, `table.fill`, `table.copy`, `table.init`, `elem.drop`, `data.drop` or
//!   `memory.init` (rustc's wasm32-wasip1 output uses none of them).
//!
//! It also finds where a suspendable module keeps its [`ShadowStack`], whose pages the host
//! releases while the module is idle, and what its data segments put in a fresh instance's
//! memory ([`ImageDigest`]), which its snapshots leave out.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use wasm_encoder::{Encode as _, ExportKind, RawSection};
use wasmparser::{
    ConstExpr, DataKind, Encoding, ExternalKind, KnownCustom, Name, Operator, Parser, Payload,
    TypeRef, ValType,
};

use super::ImageDigest;
use crate::runtime::shadow_stack::ShadowStack;

/// The prefix of the exports [`prepare`] adds; the global's index follows.
pub const GLOBAL_EXPORT_PREFIX: &str = "__kube_wasm_global_";

/// The name LLVM's wasm linker gives the shadow stack's pointer.
const STACK_POINTER: &str = "__stack_pointer";

/// What a snapshot of a suspendable module holds besides its linear memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotLayout {
    /// The export names of the module's mutable globals, by increasing global index (after
    /// [`prepare`], every mutable global has one).
    pub globals: Vec<String>,
    /// Its shadow stack, if it is laid out as [`ShadowStack`] says: its pages are dead
    /// between entries.
    pub stack: Option<ShadowStack>,
    /// What a fresh instance's memory holds, which a snapshot leaves out; `None` if a data
    /// segment's offset is not an `i32.const` (then a snapshot holds every non-zero chunk).
    pub image: Option<ImageDigest>,
}

/// Whether a module can be suspended to disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suspendable {
    /// Yes: its state between entries is its memory and these globals.
    Yes(Arc<SnapshotLayout>),
    /// No, for this reason (one sentence, e.g. "function 12 uses `table.grow` …").
    No(String),
}

/// A module ready to compile: its bytes (rewritten, or the original ones when nothing had to
/// change or the module cannot be suspended) and whether it can be suspended.
#[derive(Debug, Clone)]
pub struct Prepared<'a> {
    /// The wasm to compile.
    pub wasm: Cow<'a, [u8]>,
    /// Whether instances of it can be suspended.
    pub suspendable: Suspendable,
}

/// Checks whether `wasm` can be suspended and, if it can, exports its unexported mutable
/// globals. Never fails: bytes that are not a valid module are returned unchanged (compiling
/// them reports the problem) with [`Suspendable::No`].
pub fn prepare(wasm: &[u8]) -> Prepared<'_> {
    let checked = check(wasm);
    Prepared {
        suspendable: checked.suspendable.clone(),
        wasm: checked.wasm(),
    }
}

/// A module checked by [`check`]: whether it can be suspended, and the rewrite [`prepare`]
/// makes of it, not yet made.
#[derive(Debug)]
pub struct Checked<'a> {
    wasm: &'a [u8],
    /// Whether instances of it can be suspended.
    pub suspendable: Suspendable,
    /// The rewrite, if one is needed.
    rewrite: Option<Rewrite>,
}

/// The module's sections with a new export section.
#[derive(Debug)]
struct Rewrite {
    /// Every section's id and content range, in order.
    sections: Vec<(u8, Range<usize>)>,
    /// The export section's content range.
    export_section: Range<usize>,
    /// Its new content.
    exports: Vec<u8>,
}

impl<'a> Checked<'a> {
    /// The wasm [`prepare`] gives: the module with its mutable globals exported, or its
    /// bytes as they are. Copies the module (once) when it has to be rewritten.
    pub fn wasm(&self) -> Cow<'a, [u8]> {
        let Some(rewrite) = &self.rewrite else {
            return Cow::Borrowed(self.wasm);
        };
        let mut module = wasm_encoder::Module::new();
        for (id, range) in &rewrite.sections {
            let data = if *range == rewrite.export_section {
                &rewrite.exports
            } else {
                &self.wasm[range.clone()]
            };
            module.section(&RawSection { id: *id, data });
        }
        Cow::Owned(module.finish())
    }
}

/// What [`prepare`] finds out about `wasm` without copying it: whether it can be suspended,
/// and the export section it would get. One pass over the module.
pub fn check(wasm: &[u8]) -> Checked<'_> {
    let unchanged = |why: String| Checked {
        wasm,
        suspendable: Suspendable::No(why),
        rewrite: None,
    };
    let scan = match scan(wasm) {
        Ok(Ok(scan)) => scan,
        Ok(Err(why)) => return unchanged(why),
        Err(e) => return unchanged(format!("it could not be read as wasm ({e})")),
    };
    let mut names = Vec::with_capacity(scan.mutable_globals.len());
    let mut added = Vec::new();
    for &index in &scan.mutable_globals {
        let existing = scan
            .exports
            .iter()
            .find(|(kind, i, _)| *kind == ExternalKind::Global && *i == index);
        match existing {
            Some((_, _, name)) => names.push(name.clone()),
            None => {
                let name = format!("{GLOBAL_EXPORT_PREFIX}{index}");
                if scan.exports.iter().any(|(_, _, n)| *n == name) {
                    return unchanged(format!(
                        "it already exports a `{name}` that is not its global {index}"
                    ));
                }
                added.push((name.clone(), index));
                names.push(name);
            }
        }
    }
    let stack = scan.shadow_stack(&names);
    let layout = Arc::new(SnapshotLayout {
        globals: names,
        stack,
        image: scan.image(),
    });
    if added.is_empty() {
        return Checked {
            wasm,
            suspendable: Suspendable::Yes(layout),
            rewrite: None,
        };
    }
    let Some(export_section) = scan.export_section.clone() else {
        return unchanged("it has no export section".into());
    };
    let exports = match extend_exports(&wasm[export_section.clone()], &added) {
        Ok(data) => data,
        Err(e) => return unchanged(format!("its export section could not be read ({e})")),
    };
    Checked {
        wasm,
        suspendable: Suspendable::Yes(layout),
        rewrite: Some(Rewrite {
            sections: scan.sections,
            export_section,
            exports,
        }),
    }
}

/// What one pass over a module found.
struct Scan<'a> {
    /// Every section's id and content range, in order.
    sections: Vec<(u8, Range<usize>)>,
    /// The export section's content range.
    export_section: Option<Range<usize>>,
    /// Exports: kind, index, name.
    exports: Vec<(ExternalKind, u32, String)>,
    /// Indices of the mutable globals defined by the module.
    mutable_globals: Vec<u32>,
    /// The index of the global the name section calls `__stack_pointer`.
    stack_pointer: Option<u32>,
    /// The initial values of the module's mutable `i32` globals set by an `i32.const`.
    i32_inits: Vec<(u32, i32)>,
    /// Each active data segment: its offset (`None`: not an `i32.const`) and its bytes.
    data: Vec<(Option<u32>, &'a [u8])>,
}

impl Scan<'_> {
    /// The digest of a fresh instance's memory, if every active data segment's offset is
    /// known.
    fn image(&self) -> Option<ImageDigest> {
        let segments = self
            .data
            .iter()
            .map(|(offset, bytes)| Some((u64::from((*offset)?), *bytes)))
            .collect::<Option<Vec<_>>>()?;
        Some(ImageDigest::from_segments(segments))
    }

    /// The module's shadow stack, given the export names of its mutable globals (in the
    /// order of `mutable_globals`): a `__stack_pointer` that starts at an `i32.const` at or
    /// below every active data segment, of which there is at least one (without data, bss
    /// could lie below the pointer).
    fn shadow_stack(&self, names: &[String]) -> Option<ShadowStack> {
        let index = self.stack_pointer?;
        let (_, top) = self.i32_inits.iter().find(|(i, _)| *i == index)?;
        let top = u32::try_from(*top).ok()?;
        let stack_first = !self.data.is_empty()
            && self
                .data
                .iter()
                .all(|(offset, _)| offset.is_some_and(|offset| offset >= top));
        if !stack_first {
            return None;
        }
        let position = self.mutable_globals.iter().position(|i| *i == index)?;
        Some(ShadowStack {
            pointer: names.get(position)?.clone(),
            top,
        })
    }
}

/// The value of a constant expression that is one `i32.const`.
fn i32_const(expr: &ConstExpr<'_>) -> Option<i32> {
    let mut ops = expr.get_operators_reader();
    let value = match ops.read().ok()? {
        Operator::I32Const { value } => value,
        _ => return None,
    };
    matches!(ops.read().ok()?, Operator::End).then_some(value)
}

/// Reads the module once. `Ok(Err(why))`: readable but not suspendable.
fn scan(wasm: &[u8]) -> wasmparser::Result<Result<Scan<'_>, String>> {
    let mut found = Scan {
        sections: Vec::new(),
        export_section: None,
        exports: Vec::new(),
        mutable_globals: Vec::new(),
        stack_pointer: None,
        i32_inits: Vec::new(),
        data: Vec::new(),
    };
    let (mut memories, mut imported_globals, mut function) = (0u32, 0u32, 0u32);
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload?;
        if let Some((id, range)) = payload.as_section()
            && !matches!(payload, Payload::CodeSectionEntry(_))
        {
            found.sections.push((id, range));
        }
        match payload {
            Payload::Version {
                encoding: Encoding::Component,
                ..
            } => return Ok(Err("it is a component, not a core module".into())),
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import?;
                    match import.ty {
                        TypeRef::Memory(_) => {
                            return Ok(Err("it imports its linear memory".into()));
                        }
                        TypeRef::Global(global) => {
                            if global.mutable {
                                return Ok(Err(format!(
                                    "it imports the mutable global `{}::{}`",
                                    import.module, import.name
                                )));
                            }
                            imported_globals += 1;
                        }
                        TypeRef::Func(_) | TypeRef::FuncExact(_) => function += 1,
                        TypeRef::Table(_) | TypeRef::Tag(_) => {}
                    }
                }
            }
            Payload::MemorySection(reader) => {
                for memory in reader {
                    if memory?.shared {
                        return Ok(Err("its linear memory is shared".into()));
                    }
                    memories += 1;
                }
            }
            Payload::GlobalSection(reader) => {
                for (i, global) in reader.into_iter().enumerate() {
                    let global = global?;
                    let ty = global.ty;
                    let index = imported_globals + u32::try_from(i).unwrap_or(u32::MAX);
                    if !ty.mutable {
                        continue;
                    }
                    if let Some(value) = i32_const(&global.init_expr) {
                        found.i32_inits.push((index, value));
                    }
                    if ty.shared {
                        return Ok(Err(format!("its mutable global {index} is shared")));
                    }
                    if let ValType::Ref(_) = ty.content_type {
                        return Ok(Err(format!(
                            "its mutable global {index} holds a reference, which a snapshot cannot carry"
                        )));
                    }
                    found.mutable_globals.push(index);
                }
            }
            Payload::ExportSection(reader) => {
                found.export_section = Some(reader.range());
                for export in reader {
                    let export = export?;
                    found
                        .exports
                        .push((export.kind, export.index, export.name.to_owned()));
                }
            }
            Payload::DataSection(reader) => {
                for data in reader {
                    let data = data?;
                    if let DataKind::Active { offset_expr, .. } = data.kind {
                        let offset = i32_const(&offset_expr).and_then(|o| u32::try_from(o).ok());
                        found.data.push((offset, data.data));
                    }
                }
            }
            Payload::CustomSection(reader) => {
                if let KnownCustom::Name(names) = reader.as_known() {
                    // A malformed name section only costs the stack release.
                    for subsection in names.into_iter().map_while(Result::ok) {
                        if let Name::Global(map) = subsection {
                            found.stack_pointer = map
                                .into_iter()
                                .map_while(Result::ok)
                                .find(|naming| naming.name == STACK_POINTER)
                                .map(|naming| naming.index);
                        }
                    }
                }
            }
            Payload::StartSection { func, .. } => {
                return Ok(Err(format!(
                    "it has a start function (function {func}), which would run again at each resume"
                )));
            }
            Payload::CodeSectionEntry(body) => {
                let mut ops = body.get_operators_reader()?;
                while !ops.eof() {
                    if let Some(instruction) = escapes_snapshot(&ops.read()?) {
                        return Ok(Err(format!(
                            "function {function} uses `{instruction}`, which changes state a \
                             snapshot of memory and globals does not capture"
                        )));
                    }
                }
                function += 1;
            }
            _ => {}
        }
    }
    if memories != 1 {
        return Ok(Err(format!(
            "it defines {memories} linear memories (a snapshot handles exactly one)"
        )));
    }
    Ok(Ok(found))
}

/// The name of an instruction that changes instance state other than memory and globals.
fn escapes_snapshot(op: &Operator<'_>) -> Option<&'static str> {
    Some(match op {
        Operator::TableSet { .. } => "table.set",
        Operator::TableGrow { .. } => "table.grow",
        Operator::TableFill { .. } => "table.fill",
        Operator::TableCopy { .. } => "table.copy",
        Operator::TableInit { .. } => "table.init",
        Operator::ElemDrop { .. } => "elem.drop",
        Operator::DataDrop { .. } => "data.drop",
        Operator::MemoryInit { .. } => "memory.init",
        _ => return None,
    })
}

/// The content of an export section `section` with `added` global exports after its own
/// entries, which are kept byte for byte.
fn extend_exports(section: &[u8], added: &[(String, u32)]) -> wasmparser::Result<Vec<u8>> {
    let mut reader = wasmparser::BinaryReader::new(section, 0);
    let count = reader.read_var_u32()?;
    let entries = &section[reader.current_position()..];
    let more = u32::try_from(added.len()).unwrap_or(u32::MAX);
    let mut data = Vec::with_capacity(section.len() + added.len() * 32);
    count.saturating_add(more).encode(&mut data);
    data.extend_from_slice(entries);
    for (name, index) in added {
        name.as_str().encode(&mut data);
        ExportKind::Global.encode(&mut data);
        index.encode(&mut data);
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wasm(wat: &str) -> Vec<u8> {
        wat::parse_str(wat).expect("test WAT")
    }

    fn why_not(wat: &str) -> String {
        let bytes = wasm(wat);
        let prepared = prepare(&bytes);
        assert!(
            matches!(prepared.wasm, Cow::Borrowed(_)),
            "an unsuspendable module is not rewritten"
        );
        match prepared.suspendable {
            Suspendable::No(why) => why,
            Suspendable::Yes(layout) => panic!("expected unsuspendable, got {layout:?}"),
        }
    }

    /// The exports of `bytes`, as (name, kind, index).
    fn exports(bytes: &[u8]) -> Vec<(String, ExternalKind, u32)> {
        let mut out = Vec::new();
        for payload in Parser::new(0).parse_all(bytes) {
            if let Payload::ExportSection(reader) = payload.expect("valid") {
                for e in reader {
                    let e = e.expect("valid");
                    out.push((e.name.to_owned(), e.kind, e.index));
                }
            }
        }
        out
    }

    /// Section ids and contents of `bytes`, without the export section.
    fn other_sections(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
        Parser::new(0)
            .parse_all(bytes)
            .filter_map(|p| {
                let p = p.expect("valid");
                if matches!(p, Payload::ExportSection(_) | Payload::CodeSectionEntry(_)) {
                    return None;
                }
                p.as_section().map(|(id, r)| (id, bytes[r].to_vec()))
            })
            .collect()
    }

    const RUSTLIKE: &str = r#"(module
        (import "env" "f" (func $f))
        (import "env" "g" (global $imported i32))
        (memory (export "memory") 1)
        (global $sp (mut i32) (i32.const 1024))
        (global $const i64 (i64.const 7))
        (global $tls (mut i64) (i64.const 0))
        (global $exported (mut f64) (f64.const 1.5))
        (table 2 funcref)
        (elem (i32.const 0) $a $b)
        (func $a (global.set $sp (i32.const 8)) (call_indirect (i32.const 1)))
        (func $b (memory.fill (i32.const 0) (i32.const 0) (i32.const 4)))
        (export "a" (func $a))
        (export "the_f64" (global $exported))
        (data (i32.const 0) "hi")
        (@custom "name-like" "kept as it is")
    )"#;

    #[test]
    fn unexported_mutable_globals_get_exports_and_the_rest_is_kept() {
        let original = wasm(RUSTLIKE);
        let prepared = prepare(&original);
        let Suspendable::Yes(layout) = &prepared.suspendable else {
            panic!("suspendable: {:?}", prepared.suspendable);
        };
        // Globals: 0 imported, 1 $sp, 2 $const, 3 $tls, 4 $exported.
        assert_eq!(
            layout.globals,
            ["__kube_wasm_global_1", "__kube_wasm_global_3", "the_f64"]
        );
        let rewritten: &[u8] = &prepared.wasm;
        wasmparser::Validator::new()
            .validate_all(rewritten)
            .expect("the rewritten module is valid");
        let mut want = exports(&original);
        want.push(("__kube_wasm_global_1".into(), ExternalKind::Global, 1));
        want.push(("__kube_wasm_global_3".into(), ExternalKind::Global, 3));
        assert_eq!(exports(rewritten), want);
        assert_eq!(
            other_sections(rewritten),
            other_sections(&original),
            "every other section is copied byte for byte, custom sections included"
        );
    }

    #[test]
    fn the_new_exports_read_and_write_the_globals() {
        let original = wasm(
            r#"(module (memory 1) (global $g (mut i32) (i32.const 5))
                 (func (export "bump") (global.set $g (i32.add (global.get $g) (i32.const 1)))))"#,
        );
        let prepared = prepare(&original);
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, &*prepared.wasm).expect("compiles");
        let mut store = wasmtime::Store::new(&engine, ());
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("instantiates");
        let global = instance
            .get_global(&mut store, "__kube_wasm_global_0")
            .expect("exported");
        let bump = instance
            .get_typed_func::<(), ()>(&mut store, "bump")
            .expect("bump");
        bump.call(&mut store, ()).expect("runs");
        assert_eq!(global.get(&mut store).i32(), Some(6));
        global
            .set(&mut store, wasmtime::Val::I32(40))
            .expect("settable");
        bump.call(&mut store, ()).expect("runs");
        assert_eq!(global.get(&mut store).i32(), Some(41));
    }

    #[test]
    fn a_module_with_nothing_to_export_is_not_copied() {
        let bytes = wasm(
            r#"(module (memory 1) (global $g (mut i32) (i32.const 0)) (export "g" (global $g)))"#,
        );
        let prepared = prepare(&bytes);
        assert!(matches!(prepared.wasm, Cow::Borrowed(_)));
        assert_eq!(
            prepared.suspendable,
            Suspendable::Yes(Arc::new(SnapshotLayout {
                globals: vec!["g".into()],
                stack: None,
                image: Some(ImageDigest::from_segments([])),
            }))
        );
    }

    /// The image digest `prepare` finds in a module with `data` (WAT fields).
    fn image_of(data: &str) -> Option<ImageDigest> {
        let bytes = wasm(&format!("(module (memory 3) {data})"));
        match prepare(&bytes).suspendable {
            Suspendable::Yes(layout) => layout.image.clone(),
            Suspendable::No(why) => panic!("not suspendable: {why}"),
        }
    }

    #[test]
    fn the_image_is_what_the_active_data_segments_write() {
        let image = image_of(
            r#"(data (i32.const 8) "one") (data (i32.const 70000) "two") (data "passive")"#,
        )
        .expect("known offsets");
        assert_eq!(
            image,
            ImageDigest::from_segments([(8, &b"one"[..]), (70000, &b"two"[..])]),
            "the passive segment never reaches memory"
        );
        assert_eq!(image.chunks(), 2);
        assert_eq!(
            image_of(r#"(global $base i32 (i32.const 64)) (data (global.get $base) "x")"#),
            None,
            "an offset that is not an i32.const leaves the image unknown"
        );
    }

    /// The shadow stack `prepare` finds in a module whose globals are `globals` and whose
    /// data is `data` (WAT fields).
    fn stack_of(globals: &str, data: &str) -> Option<ShadowStack> {
        let bytes = wasm(&format!(
            r#"(module (memory (export "memory") 2) {globals} {data})"#
        ));
        match prepare(&bytes).suspendable {
            Suspendable::Yes(layout) => layout.stack.clone(),
            Suspendable::No(why) => panic!("not suspendable: {why}"),
        }
    }

    #[test]
    fn a_stack_first_module_has_a_shadow_stack_below_its_named_stack_pointer() {
        let pointer = "(global $__stack_pointer (mut i32) (i32.const 65536))";
        let data = r#"(data (i32.const 65536) "d") (data (i32.const 70000) "e")"#;
        assert_eq!(
            stack_of(
                &format!("(global $other (mut i32) (i32.const 0)) {pointer}"),
                data
            ),
            Some(ShadowStack {
                pointer: "__kube_wasm_global_1".into(),
                top: 65536
            })
        );
        assert_eq!(
            stack_of(
                &format!(r#"{pointer} (export "sp" (global $__stack_pointer))"#),
                data
            ),
            Some(ShadowStack {
                pointer: "sp".into(),
                top: 65536
            }),
            "an exported stack pointer is read under its own name"
        );
        for (globals, data, why) in [
            (
                pointer,
                r#"(data (i32.const 1024) "d")"#,
                "data below the pointer",
            ),
            (pointer, "", "no data: bss could lie below the pointer"),
            (
                "(global $sp (mut i32) (i32.const 65536))",
                r#"(data (i32.const 65536) "d")"#,
                "no global named __stack_pointer",
            ),
            (
                "(global $base i32 (i32.const 65536))                  (global $__stack_pointer (mut i32) (global.get $base))",
                r#"(data (i32.const 65536) "d")"#,
                "an initial value that is not an i32.const",
            ),
            (
                pointer,
                r#"(global $at i32 (i32.const 65536)) (data (global.get $at) "d")"#,
                "a data offset that is not an i32.const",
            ),
        ] {
            assert_eq!(stack_of(globals, data), None, "{why}");
        }
    }

    #[test]
    fn state_a_snapshot_cannot_hold_makes_a_module_unsuspendable() {
        for (wat, want) in [
            (
                r#"(module (memory 1) (table 1 funcref)
                     (func (drop (table.grow (ref.null func) (i32.const 1)))))"#,
                "function 0 uses `table.grow`",
            ),
            (
                r#"(module (import "e" "f" (func)) (memory 1) (table 1 funcref)
                     (func (table.set (i32.const 0) (ref.null func))))"#,
                "function 1 uses `table.set`",
            ),
            (
                r#"(module (memory 1) (data $d "x")
                     (func (memory.init $d (i32.const 0) (i32.const 0) (i32.const 1))))"#,
                "`memory.init`",
            ),
            (
                r#"(module (memory 1) (data $d "x") (func (data.drop $d)))"#,
                "`data.drop`",
            ),
            (
                r#"(module (memory 1) (table 1 funcref) (elem $e func)
                     (func (elem.drop $e)))"#,
                "`elem.drop`",
            ),
            (
                r#"(module (memory 1) (table 2 funcref)
                     (func (table.copy (i32.const 0) (i32.const 1) (i32.const 1))))"#,
                "`table.copy`",
            ),
            (
                r#"(module (memory 1) (table 1 funcref)
                     (func (table.fill (i32.const 0) (ref.null func) (i32.const 1))))"#,
                "`table.fill`",
            ),
            (
                r#"(module (memory 1) (table 1 funcref) (elem $e func)
                     (func (table.init $e (i32.const 0) (i32.const 0) (i32.const 0))))"#,
                "`table.init`",
            ),
            (
                r#"(module (memory 1) (func $s) (start $s))"#,
                "it has a start function",
            ),
            (r#"(module (func))"#, "it defines 0 linear memories"),
            (
                r#"(module (memory 1) (memory 1))"#,
                "it defines 2 linear memories",
            ),
            (
                r#"(module (import "e" "m" (memory 1)))"#,
                "it imports its linear memory",
            ),
            (
                r#"(module (memory 1 1 shared))"#,
                "its linear memory is shared",
            ),
            (
                r#"(module (import "e" "g" (global (mut i32))) (memory 1))"#,
                "it imports the mutable global `e::g`",
            ),
            (
                r#"(module (memory 1) (global (mut funcref) (ref.null func)))"#,
                "its mutable global 0 holds a reference",
            ),
            (
                r#"(module (memory 1) (global (mut i32) (i32.const 0))
                     (func (export "__kube_wasm_global_0")))"#,
                "it already exports a `__kube_wasm_global_0`",
            ),
            (r#"(component)"#, "it is a component"),
        ] {
            let why = why_not(wat);
            assert!(why.contains(want), "{wat}: {why:?} lacks {want:?}");
        }
        let garbage = prepare(b"\0asm\x01\0\0\0\x07\x05");
        assert!(
            matches!(garbage.suspendable, Suspendable::No(why) if why.contains("could not be read"))
        );
    }
}
