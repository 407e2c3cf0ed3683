//! A small module with a function table, for the tests of the rewrites the host makes before
//! compiling ([`super::merge_functions`], [`super::func_refs`]), and what they read back.

use std::sync::{Arc, Mutex};

use wasmparser::{Parser, Payload};
use wasmtime::{Engine, Instance, Linker, Module, Store};

use super::func_refs::instrument::{IMPORT_MODULE, IMPORT_NAME};

/// Two pairs of identical functions: `leaf_a`/`leaf_b`, and `call_a`/`call_b`, which differ
/// only in which leaf they call; `other` has `leaf_a`'s body but another type. All are in
/// the table, and `dispatch` calls slot `i` indirectly. Function 0 is the import; `leaf_a`
/// is 1, `leaf_b` 2, `call_a` 3, `call_b` 4, `other` 5, `plain` 6.
pub const WAT: &str = r#"
    (module
      (type $unary (func (param i32) (result i32)))
      (type $binary (func (param i32 i32) (result i32)))
      (import "host" "seven" (func $seven (result i32)))
      (table 6 funcref)
      (elem (i32.const 0) func $leaf_a $leaf_b $call_a $call_b $leaf_a $plain)
      (func $leaf_a (type $unary) (i32.add (local.get 0) (i32.const 1)))
      (func $leaf_b (type $unary) (i32.add (local.get 0) (i32.const 1)))
      (func $call_a (type $unary) (i32.mul (call $leaf_a (local.get 0)) (i32.const 2)))
      (func $call_b (type $unary) (i32.mul (call $leaf_b (local.get 0)) (i32.const 2)))
      (func $other (type $binary) (i32.add (local.get 0) (i32.const 1)))
      (func $plain (type $unary) (i32.add (local.get 0) (call $seven)))
      (func (export "dispatch") (param i32 i32) (result i32)
        (call_indirect (type $unary) (local.get 0) (local.get 1)))
      (func (export "leaf_b") (type $unary) (call $leaf_b (local.get 0)))
      (export "other" (func $other)))
"#;

/// The function indices the element segments of `wasm` name, in order, with each
/// segment's mode.
pub fn element_segments(wasm: &[u8]) -> Vec<(&'static str, Vec<u32>)> {
    let mut out = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        if let Payload::ElementSection(reader) = payload.expect("parses") {
            for element in reader {
                let element = element.expect("element");
                let mode = match element.kind {
                    wasmparser::ElementKind::Active { .. } => "active",
                    wasmparser::ElementKind::Passive => "passive",
                    wasmparser::ElementKind::Declared => "declared",
                };
                let functions = match element.items {
                    wasmparser::ElementItems::Functions(functions) => {
                        functions.into_iter().map(|f| f.expect("index")).collect()
                    }
                    wasmparser::ElementItems::Expressions(..) => panic!("expressions"),
                };
                out.push((mode, functions));
            }
        }
    }
    out
}

/// The function indices the element segments of `wasm` name, in order.
pub fn element_functions(wasm: &[u8]) -> Vec<u32> {
    element_segments(wasm)
        .into_iter()
        .flat_map(|(_, functions)| functions)
        .collect()
}

/// The name section's function names of `wasm`, by index.
pub fn function_names(wasm: &[u8]) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        if let Payload::CustomSection(section) = payload.expect("parses")
            && let wasmparser::KnownCustom::Name(names) = section.as_known()
        {
            for name in names {
                if let wasmparser::Name::Function(map) = name.expect("name") {
                    for naming in map {
                        let naming = naming.expect("naming");
                        out.push((naming.index, naming.name.to_owned()));
                    }
                }
            }
        }
    }
    out
}

/// What a module shaped like [`WAT`] answers: `dispatch(x, slot)` for every slot, then
/// `leaf_b(x)` and `other(x, 0)`.
pub fn run(wasm: &[u8], x: i32) -> Vec<i32> {
    run_reporting_slots(wasm, x).0
}

/// [`run`], with the slot import of [`super::func_refs::instrument`] provided; also the slots
/// it reported, in order.
pub fn run_reporting_slots(wasm: &[u8], x: i32) -> (Vec<i32>, Vec<i32>) {
    let engine = Engine::default();
    let module = Module::new(&engine, wasm).expect("compiles");
    let reported = Arc::new(Mutex::new(Vec::new()));
    let mut linker = Linker::new(&engine);
    linker.func_wrap("host", "seven", || 7i32).expect("seven");
    let record = reported.clone();
    linker
        .func_wrap(IMPORT_MODULE, IMPORT_NAME, move |slot: i32| {
            record.lock().expect("lock").push(slot);
            slot
        })
        .expect("slot import");
    let mut store = Store::new(&engine, ());
    let instance: Instance = linker.instantiate(&mut store, &module).expect("instance");
    let dispatch = instance
        .get_typed_func::<(i32, i32), i32>(&mut store, "dispatch")
        .expect("dispatch");
    let mut out: Vec<i32> = (0..6)
        .map(|slot| dispatch.call(&mut store, (x, slot)).expect("call"))
        .collect();
    let leaf_b = instance
        .get_typed_func::<i32, i32>(&mut store, "leaf_b")
        .expect("leaf_b");
    out.push(leaf_b.call(&mut store, x).expect("call"));
    let other = instance
        .get_typed_func::<(i32, i32), i32>(&mut store, "other")
        .expect("other");
    out.push(other.call(&mut store, (x, 0)).expect("call"));
    let reported = reported.lock().expect("lock").clone();
    (out, reported)
}
