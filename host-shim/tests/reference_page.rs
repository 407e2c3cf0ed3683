//! The book's reference page (`docs/src/operating/reference.md`) is rendered from the host's
//! own types: the manifest's schema (`Manifest::schema`), the WasmController's spec and status
//! (their JSON schemas, which the CRD is made of), the metric families of the host's registry,
//! and `host-shim run --help`. The committed page must be what they render to;
//! `KUBE_WASM_WRITE_REFERENCE=1 cargo test -p host-shim --test reference_page` writes it.

mod common;

use std::fmt::Write as _;
use std::path::Path;

use clap::Parser as _;
use host_shim::fleet::cli::Cli;
use host_shim::fleet::manifest::Manifest;
use host_shim::fleet::wasm_controller::{WasmControllerSpec, WasmControllerStatus};
use serde_json::Value;

const PAGE: &str = "../docs/src/operating/reference.md";

#[test]
fn the_books_reference_page_is_rendered_from_the_types() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PAGE);
    let page = render();
    if std::env::var_os("KUBE_WASM_WRITE_REFERENCE").is_some() {
        std::fs::write(&path, &page).expect("writing the reference page");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == page,
        "docs/src/operating/reference.md is stale: write it again with \
         `KUBE_WASM_WRITE_REFERENCE=1 cargo test -p host-shim --test reference_page`"
    );
}

#[test]
fn every_field_of_the_types_is_described() {
    let page = render();
    assert!(
        !page.contains(" |  |\n"),
        "a field without a description: give it a doc comment\n{page}"
    );
    for field in [
        "`cacheDir`",
        "`memory`",
        "`serviceAccountName`",
        "`idleAfter`",
    ] {
        assert!(page.contains(field), "{field} is missing");
    }
}

fn render() -> String {
    let mut page = String::from(
        "# Reference: manifest, WasmController, metrics, command line\n\n\
         <!-- Generated from the host's own types by host-shim's test `reference_page`: do not\n\
         edit. `KUBE_WASM_WRITE_REFERENCE=1 cargo test -p host-shim --test reference_page`\n\
         writes it again. -->\n\n\
         This page is generated from the host's types, so it says what the host accepts and\n\
         exports. **Durations** are strings of a whole number and a unit: `500ms`, `30s`, `5m`,\n\
         `1h`. **Sizes** are a whole number of bytes with an optional suffix: `Ki`, `Mi`, `Gi`,\n\
         `Ti` (powers of 1024) or `k`, `M`, `G`, `T` (powers of 1000), as in `64Mi`. Unknown\n\
         fields are errors.\n\n",
    );
    page.push_str(
        "## Manifest\n\n`host-shim run --manifest host.yaml` (see \
         [Running a fleet from a manifest](manifest.md)). Relative paths are relative to the \
         manifest's folder; the command line overrides the manifest, which overrides the \
         defaults.\n",
    );
    let manifest = Manifest::schema();
    Sections::new(manifest.as_value()).object(&mut page, "", manifest.as_value());

    page.push_str(
        "\n## WasmController\n\n`apiVersion: kube-wasm.dev/v1alpha1`, `kind: WasmController`, \
         namespaced, short name `wc` (the CRD is `deploy/wasmcontroller-crd.yaml`, printed by \
         `host-shim crd`; see [WasmControllers](wasmcontrollers.md)). The host validates a \
         spec with the manifest's rules and writes the status.\n",
    );
    let spec = schemars::schema_for!(WasmControllerSpec);
    Sections::new(spec.as_value()).object(&mut page, "spec", spec.as_value());
    let status = schemars::schema_for!(WasmControllerStatus);
    Sections::new(status.as_value()).object(&mut page, "status", status.as_value());

    page.push_str(
        "\n## Metrics\n\nServed at `/metrics` of `--metrics-addr` (OpenMetrics text; see \
         [Metrics and the dashboard](metrics.md)). A counter's series is its name with \
         `_total`; a histogram's are `_bucket` (label `le`), `_sum` and `_count`.\n\n\
         | metric | type | labels | meaning |\n| --- | --- | --- | --- |\n",
    );
    for family in common::exported_metrics::exported() {
        let labels: Vec<String> = family.labels.iter().map(|l| format!("`{l}`")).collect();
        let _ = writeln!(
            page,
            "| `{}` | {} | {} | {} |",
            family.name,
            family.kind,
            labels.join(", "),
            cell(&family.help)
        );
    }

    page.push_str("\n## Command line\n\n`host-shim run --help`:\n\n```text\n");
    let help = match Cli::try_parse_from(["host-shim", "run", "--help"]) {
        Err(help) => help.render().to_string(),
        Ok(_) => panic!("--help parses as help"),
    };
    for line in help.lines() {
        page.push_str(line.trim_end());
        page.push('\n');
    }
    page.push_str("```\n");
    page
}

/// Renders object schemas as tables, one section per object, nested objects after their
/// parent, following `$ref`s into the root schema's `$defs`.
struct Sections<'a> {
    defs: Option<&'a Value>,
}

impl<'a> Sections<'a> {
    fn new(root: &'a Value) -> Self {
        Self {
            defs: root.get("$defs"),
        }
    }

    /// The schema itself, or what its `$ref`, or the non-null branch of its `anyOf`, names.
    fn resolve(&self, schema: &'a Value) -> &'a Value {
        if let Some(name) = schema["$ref"].as_str() {
            let name = name.trim_start_matches("#/$defs/");
            return self
                .defs
                .and_then(|defs| defs.get(name))
                .map(|def| self.resolve(def))
                .unwrap_or_else(|| panic!("no definition {name}"));
        }
        if let Some(branches) = schema["anyOf"].as_array()
            && let [one] = branches
                .iter()
                .filter(|b| b["type"] != "null")
                .collect::<Vec<_>>()[..]
        {
            return self.resolve(one);
        }
        schema
    }

    /// How a value of `schema` is written: its type, an object's section, an enum's values.
    fn type_of(&self, schema: &'a Value, path: &str) -> String {
        let schema = self.resolve(schema);
        if let Some(values) = enum_values(schema) {
            return format!("one of {}", values.join(", "));
        }
        match base_type(schema) {
            Some("array") => format!("list of {}", self.type_of(&schema["items"], path)),
            Some("object") if schema.get("properties").is_some() => {
                format!("object ([`{path}`](#{}))", anchor(path))
            }
            Some("object") => format!(
                "map of string to {}",
                self.type_of(&schema["additionalProperties"], path)
            ),
            Some(other) => other.to_owned(),
            None => "any".to_owned(),
        }
    }

    /// Writes the section of the object at `path` (its heading unless it is the manifest's
    /// root), then the sections of the objects it holds.
    fn object(&self, page: &mut String, path: &str, schema: &'a Value) {
        let schema = self.resolve(schema);
        if !path.is_empty() {
            let _ = writeln!(page, "\n### `{path}`\n");
        } else {
            page.push('\n');
        }
        if let Some(description) = schema["description"].as_str() {
            let _ = writeln!(page, "{}\n", prose(description));
        }
        page.push_str("| field | type | description |\n| --- | --- | --- |\n");
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = schema["properties"].as_object().expect("an object schema");
        let mut nested = Vec::new();
        for (name, field) in properties {
            let field_path = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            let resolved = self.resolve(field);
            let (inner, inner_path) = if base_type(resolved) == Some("array") {
                (self.resolve(&resolved["items"]), format!("{field_path}[]"))
            } else {
                (resolved, field_path)
            };
            let type_ = self.type_of(field, &inner_path);
            let type_ = if required.contains(&name.as_str()) {
                format!("{type_}, **required**")
            } else {
                type_
            };
            let description = field["description"]
                .as_str()
                .or(resolved["description"].as_str())
                .map(prose)
                .unwrap_or_default();
            let _ = writeln!(page, "| `{name}` | {type_} | {} |", cell(&description));
            if base_type(inner) == Some("object") && inner.get("properties").is_some() {
                nested.push((inner_path, inner));
            }
        }
        for (nested_path, nested_schema) in nested {
            self.object(page, &nested_path, nested_schema);
        }
    }
}

/// The schema's type, `null` left out of a list of types.
fn base_type(schema: &Value) -> Option<&str> {
    match &schema["type"] {
        Value::String(t) => Some(t),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        _ => None,
    }
}

/// An enum's values, with their descriptions where the schema has them.
fn enum_values(schema: &Value) -> Option<Vec<String>> {
    if let Some(values) = schema["enum"].as_array() {
        return Some(values.iter().map(|v| format!("`{}`", str_of(v))).collect());
    }
    let branches = schema["oneOf"].as_array()?;
    branches
        .iter()
        .map(|b| {
            let value = b.get("const").or_else(|| b["enum"].get(0))?;
            Some(match b["description"].as_str() {
                Some(d) => format!("`{}` ({})", str_of(value), prose(d).trim_end_matches('.')),
                None => format!("`{}`", str_of(value)),
            })
        })
        .collect()
}

fn str_of(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

/// A doc comment as one paragraph of the book: lines joined, rustdoc's links to Rust items
/// (`` [`Item`] ``, `[text](path::to::Item)`) reduced to their text; code spans kept whole.
fn prose(doc: &str) -> String {
    let joined = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(joined.len());
    let mut rest = joined.as_str();
    loop {
        let Some(at) = rest.find(['`', '[']) else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.starts_with('`') {
            // A code span: copied as it is, brackets and all.
            let end = rest[1..].find('`').map_or(rest.len(), |e| e + 2);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        let Some(close) = rest.find(']') else {
            out.push_str(rest);
            return out;
        };
        let text = &rest[1..close];
        let after = &rest[close + 1..];
        if let Some(link) = after.strip_prefix('(')
            && let Some(end) = link.find(')')
        {
            out.push_str(text);
            rest = &link[end + 1..];
        } else if text.starts_with('`') {
            out.push_str(text);
            rest = after;
        } else {
            out.push('[');
            rest = &rest[1..];
        }
    }
}

/// Text safe inside a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The anchor mdBook gives the heading `` `path` ``.
fn anchor(path: &str) -> String {
    path.chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '_' => Some(c),
            'A'..='Z' => Some(c.to_ascii_lowercase()),
            ' ' => Some('-'),
            _ => None,
        })
        .collect()
}
