//! The merging of a module's identical functions (`runtime::merge_functions`), on any bytes:
//! it never panics, and what it makes of a module wasmtime accepts is a module wasmtime
//! accepts, with the same imports, the same export names and kinds, and as many functions.

use std::sync::OnceLock;

use host_shim::runtime::merge_functions::merge_identical_functions;
use wasmparser::{Parser, Payload};

/// Checks the merge of `data`.
pub fn run(data: &[u8]) {
    let Some(merged) = merge_identical_functions(data) else {
        return;
    };
    static ENGINE: OnceLock<wasmtime::Engine> = OnceLock::new();
    let engine = ENGINE.get_or_init(wasmtime::Engine::default);
    if wasmtime::Module::validate(engine, data).is_err() {
        return;
    }
    if let Err(err) = wasmtime::Module::validate(engine, &merged) {
        panic!("a valid module merged is invalid: {err:?}");
    }
    assert_eq!(outline(&merged), outline(data));
}

/// A module's imports (module, name, kind), export names and kinds, and number of defined
/// functions.
fn outline(wasm: &[u8]) -> (Vec<String>, Vec<String>, u32) {
    let (mut imports, mut exports, mut functions) = (Vec::new(), Vec::new(), 0);
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.expect("a valid module parses") {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.expect("an import");
                    imports.push(format!(
                        "{}.{}: {:?}",
                        import.module, import.name, import.ty
                    ));
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.expect("an export");
                    exports.push(format!("{}: {:?}", export.name, export.kind));
                }
            }
            Payload::FunctionSection(reader) => functions = reader.count(),
            _ => {}
        }
    }
    (imports, exports, functions)
}
