//! SPEC.md against this crate: every table of the spec that names part of the contract is
//! read and compared with the crate's constants and enums, both ways — every row exists in
//! the code, and every item of the code has a row. A change to either side alone fails here.
//!
//! The tables are Markdown pipe tables; a cell's first backticked token is its name (a
//! trailing `(1.1)` or prose is ignored). Each import's section has one `Completions:` line
//! listing, in backticks, every completion kind its op can receive.

use std::collections::{BTreeMap, BTreeSet};

use kube_wasm_abi::env::{ENV_PREFIX, HOST_ENV};
use kube_wasm_abi::frame::MAX_HEADER_LEN;
use kube_wasm_abi::names::{EXPORTS, IMPORT_MODULE, IMPORTS};
use kube_wasm_abi::{
    ABI_MAJOR, ABI_MINOR, ABI_VERSION, Completion, DEFAULT_STREAM_CREDIT,
    DEFAULT_WATCH_TIMEOUT_SECS, ErrorCode, HttpRequest, IDLE_FD, OpError, ResponseMode, StreamOpen,
    StreamSend, UpgradeFailure, WatchRequest,
};

const SPEC: &str = include_str!("../SPEC.md");

/// One `#`-heading of SPEC.md and the lines up to the next heading of any level.
struct Section<'a> {
    heading: &'a str,
    lines: Vec<&'a str>,
}

fn sections() -> Vec<Section<'static>> {
    let mut sections = vec![Section {
        heading: "",
        lines: Vec::new(),
    }];
    let mut in_code = false;
    for line in SPEC.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && line.starts_with('#') {
            sections.push(Section {
                heading: line.trim_start_matches('#').trim(),
                lines: Vec::new(),
            });
        } else if let Some(section) = sections.last_mut() {
            section.lines.push(line);
        }
    }
    sections
}

fn section(heading: &str) -> Section<'static> {
    let mut found: Vec<_> = sections()
        .into_iter()
        .filter(|s| s.heading == heading)
        .collect();
    assert_eq!(found.len(), 1, "SPEC.md has one section {heading:?}");
    found.remove(0)
}

/// Splits a table row into trimmed cells; `\|` is a literal `|`.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                if let Some(cell) = cells.last_mut() {
                    cell.push('|');
                }
            }
            '|' => cells.push(String::new()),
            c => {
                if let Some(cell) = cells.last_mut() {
                    cell.push(c);
                }
            }
        }
    }
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// The rows (header and separator left out) of the table in `section` whose first header
/// cell is `first`, as cells; every row must have as many cells as the header.
fn table(section: &Section<'_>, first: &str) -> Vec<Vec<String>> {
    let mut tables: Vec<Vec<&str>> = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in &section.lines {
        if line.trim_start().starts_with('|') {
            current.get_or_insert_with(Vec::new).push(line);
        } else if let Some(done) = current.take() {
            tables.push(done);
        }
    }
    tables.extend(current);
    let mut matching: Vec<_> = tables
        .into_iter()
        .filter(|t| t.first().map(|h| cells(h)[0] == first) == Some(true))
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "section {:?} has one table whose first column is {first:?}",
        section.heading
    );
    let lines = matching.remove(0);
    let width = cells(lines[0]).len();
    assert!(
        lines.len() > 1 && cells(lines[1]).iter().all(|c| c.starts_with("---")),
        "table {first:?} of {:?} has a separator row",
        section.heading
    );
    lines[2..]
        .iter()
        .map(|line| {
            let row = cells(line);
            assert_eq!(row.len(), width, "row of table {first:?}: {line}");
            row
        })
        .collect()
}

/// The backticked tokens of `text`, in order.
fn ticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The first backticked token of a cell: the name a row is about.
fn name(cell: &str) -> &str {
    ticked(cell)
        .first()
        .copied()
        .unwrap_or_else(|| panic!("cell {cell:?} names nothing in backticks"))
}

/// `spec` and `code` hold the same names, each once; the message says which are missing where.
fn same_names(what: &str, spec: &[&str], code: &[&str]) {
    let spec_set: BTreeSet<_> = spec.iter().copied().collect();
    let code_set: BTreeSet<_> = code.iter().copied().collect();
    assert_eq!(
        spec_set.len(),
        spec.len(),
        "{what}: SPEC.md repeats a row: {spec:?}"
    );
    assert_eq!(
        code_set.len(),
        code.len(),
        "{what}: the code repeats a name: {code:?}"
    );
    let only_spec: Vec<_> = spec_set.difference(&code_set).collect();
    let only_code: Vec<_> = code_set.difference(&spec_set).collect();
    assert!(
        only_spec.is_empty() && only_code.is_empty(),
        "{what}: in SPEC.md only: {only_spec:?}; in the code only: {only_code:?}"
    );
}

/// The `kind` a completion serialises with.
fn kind(c: &Completion) -> String {
    let value = serde_json::to_value(c).expect("a completion serialises");
    value["kind"]
        .as_str()
        .expect("a completion has a string kind")
        .to_owned()
}

/// One completion of every kind. The match makes a new variant a compile error here until
/// it gets a sample (and so is checked against SPEC.md).
fn completion_samples() -> Vec<Completion> {
    let samples = vec![
        Completion::Response {
            status: 200,
            headers: vec![],
        },
        Completion::Head {
            status: 200,
            headers: vec![],
        },
        Completion::Line {},
        Completion::WatchEvent {},
        Completion::End {},
        Completion::Elapsed {},
        Completion::Stop {},
        Completion::Opened {
            protocol: String::new(),
        },
        Completion::Message { text: false },
        Completion::Closed {
            code: None,
            reason: String::new(),
        },
        Completion::Sent {},
        Completion::Error(OpError::new(ErrorCode::Internal, "")),
    ];
    let index = |c: &Completion| match c {
        Completion::Response { .. } => 0,
        Completion::Head { .. } => 1,
        Completion::Line {} => 2,
        Completion::WatchEvent {} => 3,
        Completion::End {} => 4,
        Completion::Elapsed {} => 5,
        Completion::Stop {} => 6,
        Completion::Opened { .. } => 7,
        Completion::Message { .. } => 8,
        Completion::Closed { .. } => 9,
        Completion::Sent {} => 10,
        Completion::Error(_) => 11,
    };
    let covered: Vec<usize> = samples.iter().map(index).collect();
    assert_eq!(
        covered,
        (0..12).collect::<Vec<_>>(),
        "one sample per variant"
    );
    samples
}

/// Every error code, [`ErrorCode::Unknown`] included; the match makes a new variant a compile
/// error here until it is listed.
fn error_codes() -> Vec<ErrorCode> {
    let codes = vec![
        ErrorCode::Connect,
        ErrorCode::Timeout,
        ErrorCode::Stream,
        ErrorCode::TooLarge,
        ErrorCode::InvalidRequest,
        ErrorCode::Upgrade,
        ErrorCode::Internal,
        ErrorCode::Quota,
        ErrorCode::Unknown,
    ];
    let index = |c: &ErrorCode| match c {
        ErrorCode::Connect => 0,
        ErrorCode::Timeout => 1,
        ErrorCode::Stream => 2,
        ErrorCode::TooLarge => 3,
        ErrorCode::InvalidRequest => 4,
        ErrorCode::Upgrade => 5,
        ErrorCode::Internal => 6,
        ErrorCode::Quota => 7,
        ErrorCode::Unknown => 8,
    };
    let covered: Vec<usize> = codes.iter().map(index).collect();
    assert_eq!(covered, (0..9).collect::<Vec<_>>(), "one entry per variant");
    codes
}

/// Every handshake check, [`UpgradeFailure::Unknown`] left out (it is no check, only how a
/// newer host's check reads); the match makes a new variant a compile error here.
fn upgrade_checks() -> Vec<UpgradeFailure> {
    let checks = vec![
        UpgradeFailure::ProtocolSwitch { status: 200 },
        UpgradeFailure::MissingUpgradeWebSocketHeader,
        UpgradeFailure::MissingConnectionUpgradeHeader,
        UpgradeFailure::SecWebSocketAcceptKeyMismatch,
        UpgradeFailure::SecWebSocketProtocolMismatch,
        UpgradeFailure::GetPendingUpgrade,
    ];
    let index = |c: &UpgradeFailure| match c {
        UpgradeFailure::ProtocolSwitch { .. } => 0,
        UpgradeFailure::MissingUpgradeWebSocketHeader => 1,
        UpgradeFailure::MissingConnectionUpgradeHeader => 2,
        UpgradeFailure::SecWebSocketAcceptKeyMismatch => 3,
        UpgradeFailure::SecWebSocketProtocolMismatch => 4,
        UpgradeFailure::GetPendingUpgrade => 5,
        UpgradeFailure::Unknown => 6,
    };
    let covered: Vec<usize> = checks.iter().map(index).collect();
    assert_eq!(
        covered,
        (0..6).collect::<Vec<_>>(),
        "one entry per known check"
    );
    checks
}

/// The names of the `pub const`s in `source` that start with `prefix`.
fn consts_in(source: &str, prefix: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|line| line.strip_prefix("pub const "))
        .filter(|rest| rest.starts_with(prefix))
        .filter_map(|rest| rest.split(':').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_version_is_the_crates() {
    let title = sections()
        .into_iter()
        .find(|s| s.heading.starts_with("The kube-wasm ABI, version "))
        .expect("SPEC.md's title states the version")
        .heading;
    assert_eq!(
        title,
        format!("The kube-wasm ABI, version {ABI_MAJOR}.{ABI_MINOR}")
    );
    let rows: BTreeMap<String, String> = table(&section("Versioning"), "item")
        .into_iter()
        .map(|row| (row[0].clone(), row[1].clone()))
        .collect();
    let value = |item: &str| -> String {
        let cell = rows
            .get(item)
            .unwrap_or_else(|| panic!("Versioning has a row {item:?}"));
        name(cell).to_owned()
    };
    assert_eq!(value("major version"), ABI_MAJOR.to_string());
    assert_eq!(value("minor version"), ABI_MINOR.to_string());
    let packed: Vec<String> = ticked(&rows["packed version"])
        .into_iter()
        .filter_map(|t| t.strip_prefix("0x"))
        .map(|hex| hex.replace('_', ""))
        .collect();
    assert_eq!(
        packed.len(),
        1,
        "the packed version's row has one hex value"
    );
    assert_eq!(
        u32::from_str_radix(&packed[0], 16).ok(),
        Some(ABI_VERSION),
        "packed version"
    );
    assert!(
        ticked(&rows["major version"]).contains(&IMPORT_MODULE),
        "the major version's row names the import module `{IMPORT_MODULE}`"
    );
    // The crate's own docs state the version too.
    assert!(
        include_str!("../src/lib.rs").contains(&format!("version {ABI_MAJOR}.{ABI_MINOR}:")),
        "src/lib.rs's first line states ABI {ABI_MAJOR}.{ABI_MINOR}"
    );
}

#[test]
fn imports_are_the_crates() {
    let imports = section(&format!("Imports (module `{IMPORT_MODULE}`)"));
    let rows = table(&imports, "import");
    let spec: Vec<&str> = rows.iter().map(|row| name(&row[0])).collect();
    same_names("imports", &spec, IMPORTS);
    // Every `IMPORT_*` constant but the module is listed in `IMPORTS`.
    let consts = consts_in(include_str!("../src/names.rs"), "IMPORT_");
    assert_eq!(
        consts.len(),
        IMPORTS.len() + 1,
        "names.rs declares {consts:?}; IMPORTS lists {IMPORTS:?} (and IMPORT_MODULE)"
    );
}

#[test]
fn exports_are_the_crates() {
    let rows = table(&section("Exports"), "export");
    let spec: Vec<&str> = rows.iter().map(|row| name(&row[0])).collect();
    same_names("exports", &spec, EXPORTS);
    let consts = consts_in(include_str!("../src/names.rs"), "EXPORT_");
    assert_eq!(
        consts.len(),
        EXPORTS.len(),
        "names.rs declares {consts:?}; EXPORTS lists {EXPORTS:?}"
    );
}

#[test]
fn completions_are_the_crates() {
    let rows = table(&section("Completions"), "`kind`");
    let spec: Vec<&str> = rows.iter().map(|row| name(&row[0])).collect();
    let samples = completion_samples();
    let kinds: Vec<String> = samples.iter().map(kind).collect();
    let code: Vec<&str> = kinds.iter().map(String::as_str).collect();
    same_names("completion kinds", &spec, &code);
    for (sample, kind) in samples.iter().zip(&kinds) {
        let row = rows
            .iter()
            .find(|row| name(&row[0]) == kind)
            .unwrap_or_else(|| panic!("a row for `{kind}`"));
        let final_cell = row[3].as_str();
        assert!(
            matches!(final_cell, "yes" | "no"),
            "`{kind}`'s final cell is yes or no, not {final_cell:?}"
        );
        assert_eq!(
            final_cell == "yes",
            sample.is_final(),
            "SPEC.md and Completion::is_final disagree about `{kind}`"
        );
    }
}

/// The completion kinds each import's section names on its `Completions:` line.
fn completions_by_import() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    let sections = sections();
    IMPORTS
        .iter()
        .map(|import| {
            let headings = [format!("`{import}`"), format!("`{import}` header")];
            let found: Vec<_> = sections
                .iter()
                .filter(|s| headings.iter().any(|h| h == s.heading))
                .collect();
            assert_eq!(found.len(), 1, "SPEC.md has one section for `{import}`");
            let lines: Vec<&str> = found[0]
                .lines
                .iter()
                .copied()
                .filter(|l| l.starts_with("Completions:"))
                .collect();
            assert_eq!(
                lines.len(),
                1,
                "the section for `{import}` has one `Completions:` line"
            );
            let kinds: BTreeSet<&str> = ticked(lines[0]).into_iter().collect();
            (*import, kinds)
        })
        .collect()
}

#[test]
fn each_import_states_its_completions() {
    let by_import = completions_by_import();
    let kinds: BTreeSet<String> = completion_samples().iter().map(kind).collect();
    for (import, listed) in &by_import {
        for k in listed {
            assert!(
                kinds.contains(*k),
                "`{import}`'s Completions line names `{k}`, which is no completion kind"
            );
        }
    }
    // The Completions table's "sent for" column names the same imports for each kind.
    for row in table(&section("Completions"), "`kind`") {
        let kind = name(&row[0]);
        let sent_for: BTreeSet<&str> = ticked(&row[4])
            .into_iter()
            .filter(|t| IMPORTS.contains(t))
            .collect();
        let listing: BTreeSet<&str> = by_import
            .iter()
            .filter(|(_, listed)| listed.contains(kind))
            .map(|(import, _)| *import)
            .collect();
        assert_eq!(
            sent_for, listing,
            "`{kind}`: its \"sent for\" cell and the imports' Completions lines disagree"
        );
        assert!(!listing.is_empty(), "no import receives `{kind}`");
    }
}

#[test]
fn error_codes_are_the_crates() {
    let rows = table(&section("Error codes"), "`code`");
    let mut spec: Vec<&str> = Vec::new();
    let mut other_rows = 0;
    for row in &rows {
        if row[0] == "any other string" {
            other_rows += 1;
        } else {
            spec.push(name(&row[0]));
        }
    }
    assert_eq!(
        other_rows, 1,
        "one row says how an unknown code reads (ErrorCode::Unknown)"
    );
    let codes = error_codes();
    let mut known = Vec::new();
    for code in &codes {
        let json = serde_json::to_value(code).expect("a code serialises");
        let text = json.as_str().expect("a code is a string").to_owned();
        assert_eq!(
            text,
            code.to_string(),
            "Display and JSON agree for {code:?}"
        );
        if *code != ErrorCode::Unknown {
            known.push(text);
        }
    }
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    same_names("error codes", &spec, &known);
    // An unknown code reads as Unknown, as the "any other string" row says.
    assert_eq!(
        serde_json::from_str::<ErrorCode>(r#""moon_phase""#).ok(),
        Some(ErrorCode::Unknown)
    );
}

#[test]
fn upgrade_checks_are_the_crates() {
    let rows = table(&section("A failed upgrade (ABI 1.2)"), "`upgrade`");
    let spec: Vec<String> = rows
        .iter()
        .map(|row| {
            let value: serde_json::Value = serde_json::from_str(&name(&row[0]).replace("u16", "0"))
                .unwrap_or_else(|e| panic!("{:?} is a JSON object: {e}", row[0]));
            value["check"]
                .as_str()
                .unwrap_or_else(|| panic!("{:?} has a check", row[0]))
                .to_owned()
        })
        .collect();
    let code: Vec<String> = upgrade_checks()
        .iter()
        .map(|c| {
            serde_json::to_value(c).expect("a check serialises")["check"]
                .as_str()
                .expect("a check has a name")
                .to_owned()
        })
        .collect();
    let spec: Vec<&str> = spec.iter().map(String::as_str).collect();
    let code: Vec<&str> = code.iter().map(String::as_str).collect();
    same_names("upgrade checks", &spec, &code);
}

/// The JSON field names of `header`.
fn fields(header: impl serde::Serialize) -> Vec<String> {
    match serde_json::to_value(header).expect("a header serialises") {
        serde_json::Value::Object(map) => map.keys().cloned().collect(),
        other => panic!("a header is a JSON object, not {other}"),
    }
}

#[test]
fn header_fields_are_the_crates() {
    let http = HttpRequest {
        method: "GET".into(),
        uri: "/".into(),
        headers: vec![],
        response: ResponseMode::Whole,
    };
    let watch = WatchRequest {
        path: "/".into(),
        label_selector: None,
        field_selector: None,
        timeout_seconds: None,
        bookmarks: false,
        send_initial_events: false,
        resource_version: String::new(),
        metadata_only: false,
    };
    let open = StreamOpen {
        method: "GET".into(),
        uri: "/".into(),
        headers: vec![],
        credit: DEFAULT_STREAM_CREDIT,
        keepalive_secs: 0,
    };
    for (heading, code) in [
        ("`http_request` header", fields(http)),
        ("`watch` header", fields(watch)),
        ("`stream_open` header", fields(open)),
    ] {
        let rows = table(&section(heading), "field");
        let spec: Vec<&str> = rows.iter().map(|row| name(&row[0])).collect();
        let code: Vec<&str> = code.iter().map(String::as_str).collect();
        same_names(heading, &spec, &code);
    }
    let sends = [
        StreamSend::Binary {},
        StreamSend::Text {},
        StreamSend::Close {
            code: None,
            reason: String::new(),
        },
    ];
    // The match makes a new variant a compile error here until it is in `sends`.
    for send in &sends {
        match send {
            StreamSend::Binary {} | StreamSend::Text {} | StreamSend::Close { .. } => {}
        }
    }
    let code: Vec<String> = sends
        .iter()
        .map(|s| {
            serde_json::to_value(s).expect("a send serialises")["kind"]
                .as_str()
                .expect("a send has a kind")
                .to_owned()
        })
        .collect();
    let rows = table(&section("`stream_send` header"), "`kind`");
    let spec: Vec<&str> = rows.iter().map(|row| name(&row[0])).collect();
    let code: Vec<&str> = code.iter().map(String::as_str).collect();
    same_names("stream_send kinds", &spec, &code);
}

#[test]
fn defaults_and_limits_are_the_crates() {
    let row = |heading: &str, field: &str| -> String {
        table(&section(heading), "field")
            .into_iter()
            .find(|row| name(&row[0]) == field)
            .unwrap_or_else(|| panic!("{heading} has a row `{field}`"))
            .join(" | ")
    };
    let timeout = row("`watch` header", "timeout_seconds");
    assert!(
        timeout.contains(&format!(
            "the host sends {DEFAULT_WATCH_TIMEOUT_SECS} when null"
        )),
        "the `timeout_seconds` row states DEFAULT_WATCH_TIMEOUT_SECS ({DEFAULT_WATCH_TIMEOUT_SECS}): {timeout}"
    );
    let credit = row("`stream_open` header", "credit");
    assert!(
        credit.contains(&format!("default {DEFAULT_STREAM_CREDIT} ")),
        "the `credit` row states DEFAULT_STREAM_CREDIT ({DEFAULT_STREAM_CREDIT}): {credit}"
    );
    assert_eq!(MAX_HEADER_LEN, 1024 * 1024);
    assert!(
        section("Frames")
            .lines
            .contains(&"- The header is at most 1 MiB. Unknown header fields are ignored."),
        "Frames states MAX_HEADER_LEN (1 MiB)"
    );
}

#[test]
fn environment_is_the_crates() {
    let environment = section("Environment");
    let rows = table(&environment, "variable");
    let spec: Vec<&str> = rows.iter().map(|row| name(&row[0])).collect();
    same_names("environment variables", &spec, HOST_ENV);
    for var in HOST_ENV {
        assert!(
            var.starts_with(ENV_PREFIX),
            "{var} has the prefix {ENV_PREFIX}"
        );
    }
    assert!(
        environment
            .lines
            .join(" ")
            .contains(&format!("prefix `{ENV_PREFIX}`")),
        "Environment names the reserved prefix `{ENV_PREFIX}`"
    );
    let consts = consts_in(include_str!("../src/env.rs"), "ENV_");
    assert_eq!(
        consts.len(),
        HOST_ENV.len() + 1,
        "env.rs declares {consts:?}; HOST_ENV lists {HOST_ENV:?} (and ENV_PREFIX)"
    );
}

#[test]
fn the_idle_descriptor_is_the_crates() {
    let reactors = section("Reactor modules and idle polls (ABI 1.4)");
    let text = reactors.lines.join(" ");
    let decimal = format!("`{IDLE_FD}`");
    let hex = format!("{IDLE_FD:#x}");
    let hex = format!("`{}_{}`", &hex[..hex.len() - 4], &hex[hex.len() - 4..]);
    assert!(
        text.contains(&decimal) && text.contains(&hex),
        "the section names IDLE_FD as {decimal} and {hex}"
    );
}
