//! Merging a module's identical functions before it is compiled.
//!
//! rustc instantiates a generic function in every codegen unit and crate that uses it, so a
//! module carries many byte-identical copies: the `release` ring controller has 1,220
//! functions in its table, of which 896 remain once identical ones are merged. Every function
//! a module's table or exports name has a 32-byte `VMFuncRef` in each instance's `VMContext`,
//! written as the guest first calls through it, so each copy costs every instance memory, not
//! only the code once. Merging them is what binaryen's `--duplicate-function-elimination` and
//! native linkers' identical code folding do.
//!
//! Two functions are identical when they have the same type index and the same body (locals
//! and instructions) once every function they name is replaced by the one it was merged into;
//! merging repeats until a round merges nothing, at most [`MAX_ROUNDS`] rounds. Then every
//! reference to a merged function — calls, `ref.func`, element segments, exports, the start
//! function — names the lowest-numbered function of its group, and the bodies nothing names
//! any more become a lone `unreachable`. Function indices do not change: a table keeps its
//! slots (Rust's function pointers are slot numbers, so no pointer changes value), and the
//! name section stays as it is. A trap inside a merged function is reported under the name
//! of the function it was merged into. DWARF sections (`.debug_*`, which debug builds carry)
//! are dropped: they describe code offsets the re-encoded bodies no longer have, and wasmtime
//! reads them only for file and line in trap backtraces (`WASMTIME_BACKTRACE_DETAILS=1`).
//!
//! A module is left as it is (and wasmtime reports its own errors for it) when it is not a
//! core module, when any part of it does not parse or re-encode, or when nothing merges.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::convert::Infallible;
use std::panic::{AssertUnwindSafe, catch_unwind};

use wasm_encoder::reencode::{Error, Reencode, utils};
use wasm_encoder::{CodeSection, Encode as _, Function, Instruction};
use wasmparser::{Encoding, FunctionBody, Parser, Payload, TypeRef};

/// The most merging rounds: each round after the first only finds functions that differ in
/// which copies they call, so a few suffice; the bound keeps a hostile module's cost linear.
pub const MAX_ROUNDS: usize = 8;

/// The prefix of the names of DWARF's custom sections.
const DWARF_PREFIX: &str = ".debug_";

/// `wasm` with its identical functions merged, or `None` if it is to be compiled as it is
/// (see the module docs for when). Never panics: a panic in the parser or encoder on some
/// input is also `None`.
pub fn merge_identical_functions(wasm: &[u8]) -> Option<Vec<u8>> {
    catch_unwind(AssertUnwindSafe(|| {
        let functions = Functions::read(wasm)?;
        let merged_into = functions.merged_into()?;
        rewrite(wasm, functions.imported, &merged_into)
    }))
    .ok()
    .flatten()
}

/// The module's functions as the merge sees them.
struct Functions<'a> {
    /// How many functions the module imports (they come first in the index space).
    imported: u32,
    /// The type index of each function the module defines, in order.
    types: Vec<u32>,
    /// The body of each function the module defines, in order.
    bodies: Vec<FunctionBody<'a>>,
}

impl<'a> Functions<'a> {
    /// The functions of the core module `wasm`; `None` for a component or what does not
    /// parse.
    fn read(wasm: &'a [u8]) -> Option<Self> {
        let mut functions = Functions {
            imported: 0,
            types: Vec::new(),
            bodies: Vec::new(),
        };
        for payload in Parser::new(0).parse_all(wasm) {
            match payload.ok()? {
                Payload::Version {
                    encoding: Encoding::Component,
                    ..
                } => return None,
                Payload::ImportSection(reader) => {
                    for import in reader.into_imports() {
                        if let TypeRef::Func(_) | TypeRef::FuncExact(_) = import.ok()?.ty {
                            functions.imported = functions.imported.checked_add(1)?;
                        }
                    }
                }
                Payload::FunctionSection(reader) => {
                    for ty in reader {
                        functions.types.push(ty.ok()?);
                    }
                }
                Payload::CodeSectionEntry(body) => functions.bodies.push(body),
                _ => {}
            }
        }
        (functions.types.len() == functions.bodies.len()).then_some(functions)
    }

    /// For each function index, the index of the function it is merged into (itself if
    /// none); `None` if nothing merges or a body does not re-encode.
    fn merged_into(&self) -> Option<Vec<u32>> {
        let total = usize::try_from(self.imported)
            .ok()?
            .checked_add(self.bodies.len())?;
        let mut merged_into: Vec<u32> = (0..u32::try_from(total).ok()?).collect();
        let mut any = false;
        for _ in 0..MAX_ROUNDS {
            let mut first: HashMap<(u32, Vec<u8>), u32> = HashMap::new();
            let mut merged = false;
            for (index, (body, &ty)) in (self.imported..).zip(self.bodies.iter().zip(&self.types)) {
                if merged_into[index as usize] != index {
                    continue;
                }
                let key = (ty, encoded_body(body, &merged_into)?);
                match first.entry(key) {
                    Entry::Occupied(group) => {
                        merged_into[index as usize] = *group.get();
                        merged = true;
                    }
                    Entry::Vacant(group) => {
                        group.insert(index);
                    }
                }
            }
            if !merged {
                break;
            }
            any = true;
            // A function merged in an earlier round into one merged in this round: follow
            // the chain. Each merges into a lower index, resolved already in this order.
            for index in 0..merged_into.len() {
                merged_into[index] = merged_into[merged_into[index] as usize];
            }
        }
        any.then_some(merged_into)
    }
}

/// The encoding of `body` with the functions it names replaced as `merged_into` says (as a
/// code section of that one body).
fn encoded_body(body: &FunctionBody<'_>, merged_into: &[u32]) -> Option<Vec<u8>> {
    let mut names = Renamer {
        merged_into,
        imported: 0,
        next_defined: 0,
    };
    let mut code = CodeSection::new();
    utils::parse_function_body(&mut names, &mut code, body.clone()).ok()?;
    let mut bytes = Vec::new();
    code.encode(&mut bytes);
    Some(bytes)
}

/// `wasm` re-encoded with every function reference replaced as `merged_into` says and the
/// bodies of merged functions emptied.
fn rewrite(wasm: &[u8], imported: u32, merged_into: &[u32]) -> Option<Vec<u8>> {
    let mut module = wasm_encoder::Module::new();
    let mut names = Renamer {
        merged_into,
        imported,
        next_defined: 0,
    };
    names
        .parse_core_module(&mut module, Parser::new(0), wasm)
        .ok()?;
    Some(module.finish())
}

/// The re-encoder that names each function by the one it was merged into.
struct Renamer<'m> {
    merged_into: &'m [u32],
    imported: u32,
    /// The position in the code section of the next body.
    next_defined: u32,
}

impl Reencode for Renamer<'_> {
    type Error = Infallible;

    fn function_index(&mut self, func: u32) -> Result<u32, Error<Infallible>> {
        Ok(self.merged_into.get(func as usize).copied().unwrap_or(func))
    }

    /// Custom sections are copied byte for byte (no function index changes, so the name
    /// section's names stay with their functions), but for DWARF's, which are dropped.
    fn parse_custom_section(
        &mut self,
        module: &mut wasm_encoder::Module,
        section: wasmparser::CustomSectionReader<'_>,
    ) -> Result<(), Error<Infallible>> {
        if !section.name().starts_with(DWARF_PREFIX) {
            module.section(&self.custom_section(section)?);
        }
        Ok(())
    }

    fn parse_function_body(
        &mut self,
        code: &mut CodeSection,
        func: FunctionBody<'_>,
    ) -> Result<(), Error<Infallible>> {
        let index = self.imported.saturating_add(self.next_defined);
        self.next_defined = self.next_defined.saturating_add(1);
        if self.function_index(index)? == index {
            return utils::parse_function_body(self, code, func);
        }
        let mut unreachable = Function::new([]);
        unreachable.instruction(&Instruction::Unreachable);
        unreachable.instruction(&Instruction::End);
        code.function(&unreachable);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use wasm_encoder::Section as _;
    use wasmtime::{Engine, Instance, Module, Store};

    use crate::runtime::wasm_fixture::{WAT, element_functions, function_names, run as results};

    #[test]
    fn identical_functions_and_their_callers_merge_and_behave_the_same() {
        let wasm = wat::parse_str(WAT).expect("wat");
        let merged = merge_identical_functions(&wasm).expect("something merges");
        // Function 0 is the import; leaf_a 1, leaf_b 2, call_a 3, call_b 4, other 5, plain 6.
        assert_eq!(element_functions(&wasm), [1, 2, 3, 4, 1, 6]);
        assert_eq!(element_functions(&merged), [1, 1, 3, 3, 1, 6]);
        assert_eq!(results(&merged, 5), results(&wasm, 5));
        assert_eq!(results(&wasm, 5), [6, 6, 12, 12, 6, 12, 6, 6]);
        // The emptied copies and the kept names.
        assert_eq!(function_names(&merged), function_names(&wasm));
        let functions = Functions::read(&merged).expect("reads");
        let body_len = |i: usize| functions.bodies[i].range().len();
        assert!(body_len(1) < body_len(0) && body_len(3) < body_len(2));
    }

    #[test]
    fn modules_without_copies_or_not_parsing_stay_as_they_are() {
        let single = wat::parse_str(
            r#"(module (table 1 funcref) (elem (i32.const 0) func $f)
                 (func $f (result i32) (i32.const 1)))"#,
        )
        .expect("wat");
        assert_eq!(merge_identical_functions(&single), None);
        assert_eq!(merge_identical_functions(b"\0asm\x01\0\0\0\x0a\x05"), None);
        assert_eq!(merge_identical_functions(b"not wasm"), None);
    }

    /// The names of the custom sections of `wasm`, in order.
    fn custom_sections(wasm: &[u8]) -> Vec<String> {
        Parser::new(0)
            .parse_all(wasm)
            .filter_map(|payload| match payload.expect("parses") {
                Payload::CustomSection(section) => Some(section.name().to_owned()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn dwarf_is_dropped_and_other_custom_sections_kept() {
        let mut wasm = wat::parse_str(WAT).expect("wat");
        for name in [".debug_info", "producers", ".debug_line"] {
            wasm_encoder::CustomSection {
                name: name.into(),
                data: (&[0u8; 4][..]).into(),
            }
            .append_to(&mut wasm);
        }
        let merged = merge_identical_functions(&wasm).expect("something merges");
        assert_eq!(
            custom_sections(&wasm),
            ["name", ".debug_info", "producers", ".debug_line"]
        );
        assert_eq!(custom_sections(&merged), ["name", "producers"]);
        assert_eq!(results(&merged, 3), results(&wasm, 3));
    }

    #[test]
    fn chains_of_copies_take_no_more_than_the_round_bound() {
        // Two copies of f_0..f_n, where f_k calls its own copy of f_{k-1}, each defined
        // before its callee: a round merges one level, so n + 1 rounds would merge all; the
        // bound stops earlier, and what it merged still behaves the same.
        let depth = MAX_ROUNDS + 4;
        let mut funcs = String::new();
        for copy in ["a", "b"] {
            for k in (1..=depth).rev() {
                funcs += &format!(
                    "(func $f{k}{copy} (result i32) (i32.add (call $f{}{copy}) (i32.const 1)))",
                    k - 1
                );
            }
            funcs += &format!("(func $f0{copy} (result i32) (i32.const 1))");
        }
        let wat = format!(
            r#"(module {funcs}
                 (export "a" (func $f{depth}a)) (export "b" (func $f{depth}b)))"#
        );
        let wasm = wat::parse_str(&wat).expect("wat");
        let functions = Functions::read(&wasm).expect("reads");
        let merged_into = functions.merged_into().expect("merges");
        let merged = merged_into
            .iter()
            .enumerate()
            .filter(|&(i, &m)| m as usize != i)
            .count();
        assert_eq!(merged, MAX_ROUNDS);
        let out = merge_identical_functions(&wasm).expect("merges");
        let engine = Engine::default();
        let module = Module::new(&engine, &out).expect("compiles");
        let mut store = Store::new(&engine, ());
        let instance = Instance::new(&mut store, &module, &[]).expect("instance");
        for export in ["a", "b"] {
            let f = instance
                .get_typed_func::<(), i32>(&mut store, export)
                .expect("export");
            assert_eq!(f.call(&mut store, ()).expect("call"), depth as i32 + 1);
        }
    }
}
