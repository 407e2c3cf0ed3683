//! The rewrite a module is compiled from once its profile is known: the functions of the
//! slots its first run called through come first among the functions wasmtime gives a
//! `VMFuncRef`.
//!
//! wasmtime numbers an instance's func refs in the order functions first appear among the
//! module's imports, its exports and then its element segments, in section order —
//! declarative segments included, although they put nothing in a table. So the rewrite
//! inserts one declarative segment naming the profile's functions before every other
//! segment; nothing else changes (every other section is copied byte for byte, and every
//! table slot keeps its function), and a declarative segment is dropped at instantiation.
//!
//! A slot maps to a function through the module's active segments on table 0 whose offset is
//! an `i32.const`, applied in order as instantiation applies them (a later segment overwrites
//! an earlier one's slots); a slot no such segment fills names no function.

use std::borrow::Cow;
use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};

use wasm_encoder::reencode::{Reencode as _, RoundtripReencoder};
use wasm_encoder::{ElementSection, Elements, RawSection};
use wasmparser::{ElementItems, ElementKind, Encoding, Operator, Parser, Payload};

use super::instrument::MAX_TABLE_SLOTS;

/// `wasm` with the functions of `slots` (table 0) declared before its element segments, or
/// `None` if it is to be compiled as it is: it is not a core module, does not parse or
/// re-encode, or no slot names a function. Never panics.
pub fn ordered(wasm: &[u8], slots: &[u32]) -> Option<Vec<u8>> {
    catch_unwind(AssertUnwindSafe(|| {
        let table = slot_functions(wasm)?;
        let mut seen = HashSet::new();
        let first: Vec<u32> = slots
            .iter()
            .filter_map(|&slot| table.get(slot as usize).copied().flatten())
            .filter(|&function| seen.insert(function))
            .collect();
        if first.is_empty() {
            return None;
        }
        let mut module = wasm_encoder::Module::new();
        for payload in Parser::new(0).parse_all(wasm) {
            let payload = payload.ok()?;
            if let Payload::ElementSection(reader) = payload {
                let mut elements = ElementSection::new();
                elements.declared(Elements::Functions(Cow::Borrowed(&first)));
                RoundtripReencoder
                    .parse_element_section(&mut elements, reader)
                    .ok()?;
                module.section(&elements);
            } else if let Some((id, range)) = payload.as_section()
                && !matches!(payload, Payload::CodeSectionEntry(_))
            {
                module.section(&RawSection {
                    id,
                    data: wasm.get(range)?,
                });
            }
        }
        Some(module.finish())
    }))
    .ok()
    .flatten()
}

/// The function each slot of table 0 holds after instantiation, as far as the module's
/// constant active segments say; `None` for a component or what does not parse.
pub fn slot_functions(wasm: &[u8]) -> Option<Vec<Option<u32>>> {
    let mut table: Vec<Option<u32>> = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.ok()? {
            Payload::Version {
                encoding: Encoding::Component,
                ..
            } => return None,
            Payload::ElementSection(reader) => {
                for element in reader {
                    let element = element.ok()?;
                    let ElementKind::Active {
                        table_index: None | Some(0),
                        offset_expr,
                    } = element.kind
                    else {
                        continue;
                    };
                    let mut offset = offset_expr.get_operators_reader();
                    let (Ok(Operator::I32Const { value }), Ok(Operator::End)) =
                        (offset.read(), offset.read())
                    else {
                        continue;
                    };
                    let functions: Vec<Option<u32>> = match element.items {
                        ElementItems::Functions(functions) => functions
                            .into_iter()
                            .map(|f| f.ok().map(Some))
                            .collect::<Option<_>>()?,
                        ElementItems::Expressions(_, expressions) => expressions
                            .into_iter()
                            .map(|e| {
                                let e = e.ok()?;
                                let mut ops = e.get_operators_reader();
                                Some(match ops.read().ok()? {
                                    Operator::RefFunc { function_index } => Some(function_index),
                                    _ => None,
                                })
                            })
                            .collect::<Option<_>>()?,
                    };
                    let start = u32::try_from(value).ok()?;
                    let end = start.checked_add(u32::try_from(functions.len()).ok()?)?;
                    if end > MAX_TABLE_SLOTS {
                        continue;
                    }
                    if table.len() < end as usize {
                        table.resize(end as usize, None);
                    }
                    for (slot, function) in (start as usize..).zip(functions) {
                        table[slot] = function;
                    }
                }
            }
            _ => {}
        }
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::runtime::wasm_fixture::{WAT, element_segments, function_names, run};

    #[test]
    fn the_profiled_functions_are_declared_first_and_the_module_behaves_the_same() {
        let wasm = wat::parse_str(WAT).expect("wat");
        // Slots 5 and 2 (`plain`, `call_a`), 4 and 0 (both `leaf_a`), and slots past the
        // table.
        let ordered = ordered(&wasm, &[5, 2, 4, 0, 6, 1000]).expect("ordered");
        assert_eq!(
            element_segments(&ordered),
            [
                ("declared", vec![6, 3, 1]),
                ("active", vec![1, 2, 3, 4, 1, 6])
            ]
        );
        assert_eq!(run(&ordered, 4), run(&wasm, 4));
        assert_eq!(function_names(&ordered), function_names(&wasm));
    }

    #[test]
    fn no_function_to_order_leaves_the_module_as_it_is() {
        let wasm = wat::parse_str(WAT).expect("wat");
        assert!(ordered(&wasm, &[]).is_none());
        assert!(ordered(&wasm, &[6, 7, u32::MAX]).is_none());
        assert!(ordered(b"not wasm", &[0]).is_none());
    }

    #[test]
    fn slots_follow_constant_segments_the_last_one_winning() {
        let wasm = wat::parse_str(
            r#"(module
                 (table 8 funcref)
                 (global $g i32 (i32.const 0))
                 (func $a) (func $b) (func $c)
                 (elem (i32.const 1) func $a $b)
                 (elem (i32.const 2) funcref (ref.func $c) (ref.null func))
                 (elem (global.get $g) func $c)
                 (elem declare func $a))"#,
        )
        .expect("wat");
        assert_eq!(
            slot_functions(&wasm).expect("parses"),
            [None, Some(0), Some(2), None]
        );
    }
}
