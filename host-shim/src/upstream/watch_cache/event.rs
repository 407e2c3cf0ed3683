//! Reading what the API server sends: watch event lines and list bodies. Objects are kept as
//! the server's own JSON bytes (a slice of the line they came in, not a copy); only the few
//! fields the cache needs are parsed.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;

/// An object's place in the store: `(namespace, name)`; the namespace is empty for
/// cluster-scoped objects. Boxed strings: a store's ordered map keeps room for eleven keys
/// in each node, however few objects it holds.
pub type ObjectKey = (Box<str>, Box<str>);

/// The `type` of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
    /// `BOOKMARK`: only a resourceVersion.
    Bookmark,
    /// `ERROR`: the object is a `Status`.
    Error,
}

/// `kind` and `apiVersion` of the objects of a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeMeta {
    /// e.g. `ConfigMap`.
    pub kind: String,
    /// e.g. `v1`, `apps/v1`.
    pub api_version: String,
}

/// One object as the cache keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectJson {
    /// Its place in the store.
    pub key: ObjectKey,
    /// Its `metadata.resourceVersion`.
    pub resource_version: u64,
    /// Its JSON, with `kind` and `apiVersion`, as a watch event carries it.
    pub json: Bytes,
}

/// One parsed watch event line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchLine {
    /// `ADDED`, `MODIFIED` or `DELETED` of `object`; `line` is the whole event as received.
    Change {
        /// Which change.
        kind: EventType,
        /// The object after the change (before deletion for `DELETED`).
        object: ObjectJson,
        /// Its type, for bookmarks.
        type_meta: Option<TypeMeta>,
        /// The event line, byte for byte.
        line: Bytes,
    },
    /// A `BOOKMARK` at this resourceVersion.
    Bookmark(u64),
    /// An `ERROR` with the `Status` code (0 if it has none) and message.
    Error {
        /// `Status.code`, e.g. 410.
        code: u16,
        /// `Status.message`.
        message: String,
    },
}

/// A line or list the cache cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unusable {what} from the API server: {reason}")]
pub struct BadPayload {
    /// `watch event` or `list`.
    pub what: &'static str,
    /// What is wrong.
    pub reason: String,
}

fn bad(what: &'static str, reason: impl Into<String>) -> BadPayload {
    BadPayload {
        what,
        reason: reason.into(),
    }
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    object: &'a RawValue,
}

#[derive(Deserialize, Default)]
struct Meta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
}

impl Meta {
    fn into_key(self) -> ObjectKey {
        (
            self.namespace.unwrap_or_default().into_boxed_str(),
            self.name.unwrap_or_default().into_boxed_str(),
        )
    }
}

#[derive(Deserialize)]
struct ObjectHead {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default, rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default)]
    metadata: Meta,
}

/// What the cache reads of an `ERROR` event's `Status`.
#[derive(Deserialize)]
struct StatusHead {
    #[serde(default)]
    code: Option<u16>,
    #[serde(default)]
    message: Option<String>,
}

fn parse_rv(what: &'static str, rv: Option<&str>) -> Result<u64, BadPayload> {
    let rv = rv.ok_or_else(|| bad(what, "no metadata.resourceVersion"))?;
    rv.parse()
        .map_err(|_| bad(what, format!("resourceVersion {rv:?} is not a number")))
}

/// The byte range of `part` (a slice of `whole`) within `whole`.
fn range_in(whole: &[u8], part: &str) -> std::ops::Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.len()
}

/// Whether `json` (one JSON value) is an object. serde reads a struct from a JSON array too
/// (its fields in order), which no API server sends and no client reads as an object.
fn is_object(json: &[u8]) -> bool {
    json.trim_ascii_start().starts_with(b"{")
}

/// Parses one watch event line (`{"type": …, "object": …}`).
///
/// # Errors
/// [`BadPayload`] if it is not an event (a JSON object), of an unknown type, or an object
/// change without a numeric resourceVersion or whose object is not a JSON object.
pub fn parse_watch_line(line: Bytes) -> Result<WatchLine, BadPayload> {
    const WHAT: &str = "watch event";
    if !is_object(&line) {
        return Err(bad(WHAT, "not a JSON object"));
    }
    let raw: RawEvent<'_> = serde_json::from_slice(&line).map_err(|e| bad(WHAT, e.to_string()))?;
    if !is_object(raw.object.get().as_bytes()) {
        return Err(bad(WHAT, "its object is not a JSON object"));
    }
    if raw.kind == "ERROR" {
        let status: StatusHead =
            serde_json::from_str(raw.object.get()).map_err(|e| bad(WHAT, e.to_string()))?;
        return Ok(WatchLine::Error {
            code: status.code.unwrap_or(0),
            message: status.message.unwrap_or_default(),
        });
    }
    let head: ObjectHead =
        serde_json::from_str(raw.object.get()).map_err(|e| bad(WHAT, e.to_string()))?;
    let kind = match raw.kind.as_ref() {
        "ADDED" => EventType::Added,
        "MODIFIED" => EventType::Modified,
        "DELETED" => EventType::Deleted,
        "BOOKMARK" => {
            let rv = parse_rv(WHAT, head.metadata.resource_version.as_deref())?;
            return Ok(WatchLine::Bookmark(rv));
        }
        other => return Err(bad(WHAT, format!("unknown event type {other:?}"))),
    };
    let resource_version = parse_rv(WHAT, head.metadata.resource_version.as_deref())?;
    let json = line.slice(range_in(&line, raw.object.get()));
    let type_meta = match (head.kind, head.api_version) {
        (Some(kind), Some(api_version)) => Some(TypeMeta { kind, api_version }),
        _ => None,
    };
    Ok(WatchLine::Change {
        kind,
        object: ObjectJson {
            key: head.metadata.into_key(),
            resource_version,
            json,
        },
        type_meta,
        line,
    })
}

/// A parsed list response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedList {
    /// The list's `metadata.resourceVersion`: the state it shows.
    pub resource_version: u64,
    /// The list's own `kind` and `apiVersion` (e.g. `ConfigMapList`, `v1`).
    pub list_type: TypeMeta,
    /// The items' type: the list kind without `List`, the list's apiVersion.
    pub item_type: TypeMeta,
    /// The items, each given `kind` and `apiVersion` if the server left them out (it does
    /// for built-in types), so they read as in watch events.
    pub items: Vec<ObjectJson>,
    /// Whether this is one page of a longer list (its `metadata.continue` is set).
    pub more: bool,
}

#[derive(Deserialize, Default)]
struct RawListMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

#[derive(Deserialize)]
struct RawList<'a> {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default, rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default)]
    metadata: RawListMeta,
    #[serde(default, borrow)]
    items: Option<Vec<&'a RawValue>>,
}

/// Parses a list response body (`{"kind": "…List", "metadata": {…}, "items": […]}`).
///
/// # Errors
/// [`BadPayload`] if it is not a list with a numeric resourceVersion, or an item is not a JSON
/// object or lacks a resourceVersion.
pub fn parse_list(body: Bytes) -> Result<ParsedList, BadPayload> {
    const WHAT: &str = "list";
    let raw: RawList<'_> = serde_json::from_slice(&body).map_err(|e| bad(WHAT, e.to_string()))?;
    let resource_version = parse_rv(WHAT, raw.metadata.resource_version.as_deref())?;
    let more = raw
        .metadata
        .continue_token
        .is_some_and(|token| !token.is_empty());
    let list_kind = raw.kind.ok_or_else(|| bad(WHAT, "no kind"))?;
    let api_version = raw.api_version.ok_or_else(|| bad(WHAT, "no apiVersion"))?;
    let item_type = TypeMeta {
        kind: list_kind
            .strip_suffix("List")
            .unwrap_or(&list_kind)
            .to_owned(),
        api_version: api_version.clone(),
    };
    let mut items = Vec::new();
    for item in raw.items.unwrap_or_default() {
        if !is_object(item.get().as_bytes()) {
            return Err(bad(WHAT, "an item is not a JSON object"));
        }
        let head: ObjectHead =
            serde_json::from_str(item.get()).map_err(|e| bad(WHAT, e.to_string()))?;
        let resource_version = parse_rv(WHAT, head.metadata.resource_version.as_deref())?;
        let json = if head.kind.is_some() && head.api_version.is_some() {
            body.slice(range_in(&body, item.get()))
        } else {
            with_type_meta(item.get(), &item_type)
        };
        items.push(ObjectJson {
            key: head.metadata.into_key(),
            resource_version,
            json,
        });
    }
    Ok(ParsedList {
        resource_version,
        list_type: TypeMeta {
            kind: list_kind,
            api_version,
        },
        item_type,
        items,
        more,
    })
}

/// `object` (a JSON object) with `kind` and `apiVersion` put first.
fn with_type_meta(object: &str, type_meta: &TypeMeta) -> Bytes {
    let quote = |s: &str| serde_json::Value::from(s).to_string();
    let rest = object
        .trim_start()
        .strip_prefix('{')
        .unwrap_or("}")
        .trim_start();
    let separator = if rest.starts_with('}') { "" } else { "," };
    Bytes::from(format!(
        "{{\"kind\":{},\"apiVersion\":{}{separator}{rest}",
        quote(&type_meta.kind),
        quote(&type_meta.api_version)
    ))
}

/// A watch event line for `object`: `{"type":"ADDED","object":…}` and so on.
pub fn event_line(kind: &str, object: &[u8]) -> Bytes {
    let mut line = Vec::with_capacity(object.len() + 32);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(object);
    line.push(b'}');
    Bytes::from(line)
}

/// A `BOOKMARK` event at `resource_version` for objects of `type_meta`, as kube-apiserver sends
/// it (an empty object carrying only the resourceVersion).
pub fn bookmark_line(type_meta: &TypeMeta, resource_version: u64) -> Bytes {
    let object = serde_json::json!({
        "kind": type_meta.kind,
        "apiVersion": type_meta.api_version,
        "metadata": {"resourceVersion": resource_version.to_string()},
    });
    event_line("BOOKMARK", object.to_string().as_bytes())
}

/// The annotation kube-apiserver puts on the `BOOKMARK` that ends a streaming list's initial
/// events.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// The `BOOKMARK` that ends a streaming list's initial events at `resource_version`, as
/// kube-apiserver's cacher sends it: an empty object of `type_meta` carrying the
/// resourceVersion and the annotation `k8s.io/initial-events-end: "true"`.
pub fn initial_events_end_line(type_meta: &TypeMeta, resource_version: u64) -> Bytes {
    let object = serde_json::json!({
        "kind": type_meta.kind,
        "apiVersion": type_meta.api_version,
        "metadata": {
            "resourceVersion": resource_version.to_string(),
            "annotations": {INITIAL_EVENTS_END: "true"},
        },
    });
    event_line("BOOKMARK", object.to_string().as_bytes())
}

/// The `ERROR` event kube-apiserver's watch cache sends for a watch from a resourceVersion it
/// no longer holds: a `410 Expired` Status, `too old resource version: <asked> (<oldest>)`.
pub fn too_old_line(asked: u64, oldest: u64) -> Bytes {
    let status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("too old resource version: {asked} ({oldest})"),
        "reason": "Expired",
        "code": 410,
    });
    event_line("ERROR", status.to_string().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_keeps_the_line_and_slices_the_object() {
        let line = Bytes::from_static(
            br#"{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"42"},"data":{"k":"v"}}}"#,
        );
        let WatchLine::Change {
            kind,
            object,
            type_meta,
            line: kept,
        } = parse_watch_line(line.clone()).expect("parses")
        else {
            panic!("a change")
        };
        assert_eq!(kind, EventType::Modified);
        assert_eq!(object.key, ("n".into(), "a".into()));
        assert_eq!(object.resource_version, 42);
        assert!(object.json.starts_with(b"{\"kind\":\"ConfigMap\""));
        assert!(object.json.ends_with(b"\"v\"}}"));
        assert_eq!(kept, line);
        assert_eq!(
            type_meta,
            Some(TypeMeta {
                kind: "ConfigMap".into(),
                api_version: "v1".into()
            })
        );
    }

    #[test]
    fn bookmarks_and_errors() {
        let bookmark = Bytes::from_static(
            br#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"7"}}}"#,
        );
        assert_eq!(parse_watch_line(bookmark), Ok(WatchLine::Bookmark(7)));
        let gone = too_old_line(5, 10);
        assert_eq!(
            parse_watch_line(gone),
            Ok(WatchLine::Error {
                code: 410,
                message: "too old resource version: 5 (10)".into()
            })
        );
        let own = bookmark_line(
            &TypeMeta {
                kind: "Foo".into(),
                api_version: "example.com/v1".into(),
            },
            99,
        );
        assert_eq!(parse_watch_line(own), Ok(WatchLine::Bookmark(99)));
    }

    #[test]
    fn the_initial_events_end_bookmark_is_the_cachers() {
        let line = initial_events_end_line(
            &TypeMeta {
                kind: "ConfigMap".into(),
                api_version: "v1".into(),
            },
            210,
        );
        assert_eq!(parse_watch_line(line.clone()), Ok(WatchLine::Bookmark(210)));
        let event: serde_json::Value = serde_json::from_slice(&line).expect("JSON");
        assert_eq!(
            event,
            serde_json::json!({"type": "BOOKMARK", "object": {"kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"resourceVersion": "210", "annotations": {"k8s.io/initial-events-end": "true"}}}})
        );
    }

    #[test]
    fn unusable_lines_are_errors() {
        for line in [
            &b"not json"[..],
            br#"{"type":"ADDED"}"#,
            br#"{"type":"SOMETHING","object":{}}"#,
            br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#,
            br#"{"type":"ADDED","object":{"metadata":{"resourceVersion":"x"}}}"#,
            // serde reads structs from arrays too: neither the event nor its object may be one.
            br#"{"type":"ADDED","object":[null,null,{"name":"a","resourceVersion":"5"}]}"#,
            br#"["ADDED",{"metadata":{"name":"a","resourceVersion":"5"}}]"#,
            br#"{"type":"BOOKMARK","object":[null,null,{"resourceVersion":"5"}]}"#,
        ] {
            assert!(
                parse_watch_line(Bytes::copy_from_slice(line)).is_err(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn list_items_must_be_objects() {
        // Read as a struct from an array, this item would be cached as `{"kind":…}` alone.
        let body = Bytes::from_static(
            br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[[null,null,{"name":"a","resourceVersion":"90"}]]}"#,
        );
        let err = parse_list(body).expect_err("an array item");
        assert!(err.reason.contains("not a JSON object"), "{err}");
    }

    #[test]
    fn list_items_get_their_type() {
        let body = Bytes::from_static(
            br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[{"metadata":{"name":"a","namespace":"n","resourceVersion":"90"}},{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"b","namespace":"n","resourceVersion":"95"}},{}]}"#,
        );
        let err = parse_list(body).expect_err("the last item has no resourceVersion");
        assert!(err.reason.contains("resourceVersion"), "{err}");

        let body = Bytes::from_static(
            br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[{"metadata":{"name":"a","namespace":"n","resourceVersion":"90"}},{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"b","namespace":"n","resourceVersion":"95"}}]}"#,
        );
        let list = parse_list(body).expect("parses");
        assert_eq!(list.resource_version, 100);
        assert_eq!(list.item_type.kind, "ConfigMap");
        assert_eq!(list.list_type.kind, "ConfigMapList");
        let first: serde_json::Value = serde_json::from_slice(&list.items[0].json).expect("json");
        assert_eq!(first["kind"], "ConfigMap");
        assert_eq!(first["apiVersion"], "v1");
        assert_eq!(first["metadata"]["name"], "a");
        assert_eq!(list.items[1].resource_version, 95);

        let empty = parse_list(Bytes::from_static(
            br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"3"},"items":null}"#,
        ))
        .expect("parses");
        assert!(empty.items.is_empty());
        assert!(!empty.more && !list.more, "whole lists");
        let page = parse_list(Bytes::from_static(
            br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"3","continue":"eyJ2Ijoi"},"items":[]}"#,
        ))
        .expect("parses");
        assert!(page.more, "one page of more");
        assert!(
            parse_list(Bytes::from_static(
                br#"{"kind":"PodList","apiVersion":"v1","metadata":{}}"#
            ))
            .is_err()
        );
    }

    #[test]
    fn type_meta_goes_into_empty_objects_too() {
        let t = TypeMeta {
            kind: "K".into(),
            api_version: "v1".into(),
        };
        assert_eq!(
            &with_type_meta("{}", &t)[..],
            br#"{"kind":"K","apiVersion":"v1"}"#
        );
        assert_eq!(
            &with_type_meta(r#"{"a":1}"#, &t)[..],
            br#"{"kind":"K","apiVersion":"v1","a":1}"#
        );
    }
}
