//! The rewrite a module's first run is compiled from: every indirect call through table 0
//! first tells the host its slot.
//!
//! Before each `call_indirect` and `return_call_indirect` on table 0 the rewrite inserts
//! `call $slot`, a function imported from [`IMPORT_MODULE`] `.` [`IMPORT_NAME`] of type
//! `(i32) -> i32` that returns its argument: the slot is the operand on top of the stack, so
//! no local changes and every copy of a generic function stays identical to the others (the
//! merge of identical functions still merges them). The import is appended to the import
//! section, so every function the module defines moves up one index; calls, `ref.func`,
//! element segments, exports, the start function and the name section follow. DWARF sections
//! are dropped, as the merge drops them.
//!
//! A module is left as it is when it is not a core module, does not parse or re-encode, has
//! no import or type section, has other than one table (or imports it), or already imports
//! something from [`IMPORT_MODULE`].

use std::convert::Infallible;
use std::panic::{AssertUnwindSafe, catch_unwind};

use wasm_encoder::reencode::{Error, Reencode, utils};
use wasm_encoder::{CodeSection, EntityType, ImportSection, Instruction, TypeSection, ValType};
use wasmparser::{Encoding, FunctionBody, Operator, Parser, Payload, RefType, TypeRef};

/// The module of the import the rewrite adds.
pub const IMPORT_MODULE: &str = "kube_wasm_host";

/// The name of the import the rewrite adds: `(i32 slot) -> i32 slot`.
pub const IMPORT_NAME: &str = "func_ref_profile_slot";

/// The most table slots a profile records: the pooling allocator's table size
/// ([`crate::runtime::engine::new_engine`]).
pub const MAX_TABLE_SLOTS: u32 = 1 << 17;

/// The prefix of the names of DWARF's custom sections.
const DWARF_PREFIX: &str = ".debug_";

/// A module rewritten to report its indirect calls.
#[derive(Debug)]
pub struct Instrumented {
    /// The rewritten module.
    pub wasm: Vec<u8>,
    /// How many slots of table 0 it can report: its initial size, at most
    /// [`MAX_TABLE_SLOTS`].
    pub table_slots: u32,
}

/// `wasm` rewritten to report the slot of each indirect call (see the module docs), or `None`
/// if it is to run as it is. Never panics: a panic in the parser or encoder is also `None`.
pub fn instrument(wasm: &[u8]) -> Option<Instrumented> {
    catch_unwind(AssertUnwindSafe(|| {
        let shape = Shape::read(wasm)?;
        let mut reporter = SlotReporter {
            imported: shape.imported_functions,
            slot_type: shape.types,
        };
        let mut module = wasm_encoder::Module::new();
        reporter
            .parse_core_module(&mut module, Parser::new(0), wasm)
            .ok()?;
        Some(Instrumented {
            wasm: module.finish(),
            table_slots: shape.table_slots,
        })
    }))
    .ok()
    .flatten()
}

/// What the rewrite needs to know of a module before it starts.
struct Shape {
    imported_functions: u32,
    types: u32,
    table_slots: u32,
}

impl Shape {
    fn read(wasm: &[u8]) -> Option<Self> {
        let (mut imported_functions, mut types, mut tables) = (0u32, None::<u32>, Vec::new());
        let mut imports = false;
        for payload in Parser::new(0).parse_all(wasm) {
            match payload.ok()? {
                Payload::Version {
                    encoding: Encoding::Component,
                    ..
                } => return None,
                Payload::TypeSection(reader) => {
                    let mut count = 0u32;
                    for group in reader {
                        let n = u32::try_from(group.ok()?.types().len()).ok()?;
                        count = count.checked_add(n)?;
                    }
                    types = Some(count);
                }
                Payload::ImportSection(reader) => {
                    imports = true;
                    for import in reader.into_imports() {
                        let import = import.ok()?;
                        if import.module == IMPORT_MODULE {
                            return None;
                        }
                        match import.ty {
                            TypeRef::Func(_) | TypeRef::FuncExact(_) => {
                                imported_functions = imported_functions.checked_add(1)?
                            }
                            TypeRef::Table(_) => return None,
                            _ => {}
                        }
                    }
                }
                Payload::TableSection(reader) => {
                    for table in reader {
                        tables.push(table.ok()?.ty);
                    }
                }
                _ => {}
            }
        }
        let [table] = tables.as_slice() else {
            return None;
        };
        if !imports || table.table64 || table.element_type != RefType::FUNCREF {
            return None;
        }
        let table_slots = u32::try_from(table.initial.min(u64::from(MAX_TABLE_SLOTS))).ok()?;
        Some(Self {
            imported_functions,
            types: types?,
            table_slots,
        })
    }
}

/// The re-encoder that adds the import and the calls to it.
struct SlotReporter {
    /// The functions the module imported: the added import's index.
    imported: u32,
    /// The index of the added `(i32) -> i32` type: after the module's own.
    slot_type: u32,
}

impl Reencode for SlotReporter {
    type Error = Infallible;

    fn function_index(&mut self, func: u32) -> Result<u32, Error<Infallible>> {
        Ok(if func >= self.imported {
            func + 1
        } else {
            func
        })
    }

    fn parse_type_section(
        &mut self,
        types: &mut TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> Result<(), Error<Infallible>> {
        utils::parse_type_section(self, types, section)?;
        types.ty().function([ValType::I32], [ValType::I32]);
        Ok(())
    }

    fn parse_import_section(
        &mut self,
        imports: &mut ImportSection,
        section: wasmparser::ImportSectionReader<'_>,
    ) -> Result<(), Error<Infallible>> {
        utils::parse_import_section(self, imports, section)?;
        imports.import(
            IMPORT_MODULE,
            IMPORT_NAME,
            EntityType::Function(self.slot_type),
        );
        Ok(())
    }

    fn parse_custom_section(
        &mut self,
        module: &mut wasm_encoder::Module,
        section: wasmparser::CustomSectionReader<'_>,
    ) -> Result<(), Error<Infallible>> {
        if section.name().starts_with(DWARF_PREFIX) {
            return Ok(());
        }
        utils::parse_custom_section(self, module, section)
    }

    fn parse_function_body(
        &mut self,
        code: &mut CodeSection,
        func: FunctionBody<'_>,
    ) -> Result<(), Error<Infallible>> {
        let mut function = utils::new_function_with_parsed_locals(self, &func)?;
        let mut reader = func.get_operators_reader()?;
        while !reader.eof() {
            let operator = reader.read()?;
            if let Operator::CallIndirect { table_index: 0, .. }
            | Operator::ReturnCallIndirect { table_index: 0, .. } = operator
            {
                function.instruction(&Instruction::Call(self.imported));
            }
            function.instruction(&self.instruction(operator)?);
        }
        code.function(&function);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::runtime::wasm_fixture::{WAT, function_names, run, run_reporting_slots};

    #[test]
    fn indirect_calls_report_their_slot_and_the_module_behaves_the_same() {
        let wasm = wat::parse_str(WAT).expect("wat");
        let instrumented = instrument(&wasm).expect("instrumented");
        assert_eq!(instrumented.table_slots, 6);
        let (out, reported) = run_reporting_slots(&instrumented.wasm, 5);
        assert_eq!(out, run(&wasm, 5));
        // The fixture dispatches through slots 0..6, then calls `leaf_b` and `other` directly.
        assert_eq!(reported, [0, 1, 2, 3, 4, 5]);
        // Names moved with their functions; the import (function 1 now) has none.
        let shifted: Vec<(u32, String)> = function_names(&wasm)
            .into_iter()
            .map(|(i, name)| (if i >= 1 { i + 1 } else { i }, name))
            .collect();
        assert!(!shifted.is_empty());
        assert_eq!(function_names(&instrumented.wasm), shifted);
    }

    #[test]
    fn identical_functions_still_merge_once_instrumented() {
        let wasm = wat::parse_str(WAT).expect("wat");
        let instrumented = instrument(&wasm).expect("instrumented");
        let merged = crate::runtime::merge_functions::merge_identical_functions(&instrumented.wasm)
            .expect("the copies still merge");
        let (out, reported) = run_reporting_slots(&merged, 3);
        assert_eq!(out, run(&wasm, 3));
        assert_eq!(reported, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn modules_it_cannot_instrument_stay_as_they_are() {
        let cases = [
            // No table.
            r#"(module (import "a" "b" (func)) (func (export "f")))"#,
            // Two tables.
            r#"(module (import "a" "b" (func)) (table 1 funcref) (table 1 funcref))"#,
            // An imported table.
            r#"(module (import "a" "b" (table 1 funcref)) (table 1 funcref))"#,
            // No imports.
            r#"(module (table 1 funcref) (func (export "f")))"#,
            // Already importing from the host's profile module.
            r#"(module (import "kube_wasm_host" "x" (func)) (table 1 funcref))"#,
        ];
        for wat in cases {
            let wasm = wat::parse_str(wat).expect("wat");
            assert!(instrument(&wasm).is_none(), "{wat}");
        }
        assert!(instrument(b"not wasm").is_none());
    }

    #[test]
    fn the_table_slots_are_bounded() {
        let wasm = wat::parse_str(
            r#"(module (import "a" "b" (func)) (table 1000000 funcref)
                 (func (export "f") (call_indirect (i32.const 3))))"#,
        )
        .expect("wat");
        let instrumented = instrument(&wasm).expect("instrumented");
        assert_eq!(instrumented.table_slots, MAX_TABLE_SLOTS);
        wasmparser::validate(&instrumented.wasm).expect("valid");
    }
}
