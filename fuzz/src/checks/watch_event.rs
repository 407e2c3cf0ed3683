//! The watch cache's reading of what the API server sends (`watch_cache::event`): watch event
//! lines (`parse_watch_line`) and list bodies (`parse_list`).
//!
//! Invariants, besides never panicking:
//! - a change keeps its line byte for byte, and its object is a JSON object (not an array
//!   serde would read as one), a slice of the line, whose `metadata` gives its key and
//!   resourceVersion;
//! - the event line the cache makes for an object (`event_line`, `bookmark_line`) reads back
//!   to the same object, key and resourceVersion;
//! - each list item, given `kind` and `apiVersion` when it lacked them, is a JSON object with
//!   both and its own metadata.

use bytes::Bytes;
use host_shim::upstream::watch_cache::event::{
    EventType, ObjectJson, TypeMeta, WatchLine, bookmark_line, event_line, parse_list,
    parse_watch_line,
};
use serde_json::Value;

/// Checks `data` as a watch event line and as a list body.
pub fn run(data: &[u8]) {
    let bytes = Bytes::copy_from_slice(data);
    match parse_watch_line(bytes.clone()) {
        Ok(WatchLine::Change {
            kind,
            object,
            type_meta,
            line,
        }) => {
            assert_eq!(line, bytes, "the line is kept byte for byte");
            let range = object.json.as_ptr() as usize - line.as_ptr() as usize;
            assert!(
                range + object.json.len() <= line.len(),
                "the object is a slice of the line"
            );
            check_object(&object);
            let kind = match kind {
                EventType::Added => "ADDED",
                EventType::Modified => "MODIFIED",
                EventType::Deleted => "DELETED",
                other => panic!("a change of type {other:?}"),
            };
            match parse_watch_line(event_line(kind, &object.json)) {
                Ok(WatchLine::Change {
                    object: again,
                    type_meta: meta_again,
                    ..
                }) => {
                    assert_eq!(again, object);
                    assert_eq!(meta_again, type_meta);
                }
                other => panic!("the cache's own line reads as {other:?}"),
            }
            if let Some(type_meta) = type_meta {
                let bookmark = bookmark_line(&type_meta, object.resource_version);
                assert_eq!(
                    parse_watch_line(bookmark),
                    Ok(WatchLine::Bookmark(object.resource_version))
                );
            }
        }
        Ok(WatchLine::Bookmark(rv)) => {
            let type_meta = TypeMeta {
                kind: "ConfigMap".into(),
                api_version: "v1".into(),
            };
            assert_eq!(
                parse_watch_line(bookmark_line(&type_meta, rv)),
                Ok(WatchLine::Bookmark(rv))
            );
        }
        Ok(WatchLine::Error { .. }) | Err(_) => {}
    }
    if let Ok(list) = parse_list(bytes) {
        for item in &list.items {
            let value = check_object(item);
            if value.is_null() {
                continue;
            }
            for field in ["kind", "apiVersion"] {
                let got = value.get(field);
                assert!(
                    got.is_some_and(Value::is_string),
                    "item without {field}: {value}"
                );
            }
        }
    }
}

/// An object's JSON is an object whose metadata gives its key and resourceVersion. The cache
/// trusts the API server for the JSON it does not read (serde_json skips a field it ignores
/// without checking its escapes or UTF-8), so that is compared only where it parses.
fn check_object(object: &ObjectJson) -> Value {
    assert!(
        object.json.trim_ascii_start().starts_with(b"{"),
        "the cache keeps a non-object: {}",
        String::from_utf8_lossy(&object.json)
    );
    let Ok(value) = serde_json::from_slice::<Value>(&object.json) else {
        return Value::Null;
    };
    assert!(value.is_object(), "the cache keeps a non-object: {value}");
    let meta = &value["metadata"];
    let text = |field: &str| meta.get(field).and_then(Value::as_str).unwrap_or_default();
    assert_eq!((text("namespace").into(), text("name").into()), object.key);
    assert_eq!(
        text("resourceVersion").parse::<u64>().ok(),
        Some(object.resource_version)
    );
    value
}
