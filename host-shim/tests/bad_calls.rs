//! Bad ABI calls (SPEC.md, "Imports"): each ends only the module that made it, with an error
//! naming the import and the reason; the host does not panic and other modules go on.

mod common;

use common::{Guest, call_with_frame, idle_upstream, run_guests};
use host_shim::runtime::abi::BadAbiCall;
use host_shim::{ModuleError, ModuleOutcome};

fn bad_call(run: &common::Run, name: &str) -> BadAbiCall {
    match run.outcome(name) {
        ModuleOutcome::Failed(ModuleError::BadAbiCall(bad)) => bad.clone(),
        other => panic!("{name}: expected a bad ABI call, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_calls_end_only_their_module() {
    let garbage: &[u8] = b"\x05\x00\x00\x00hello";
    let truncated: &[u8] = b"\x64\x00\x00\x00{\"method\"";
    let short: &[u8] = b"\x01\x00";
    let huge_header: &[u8] = b"\xff\xff\xff\x7f{}";
    let wrong_shape = kube_wasm_abi::encode_frame(&serde_json::json!({"uri": "/api"}), b"");
    let watch_wrong_shape = kube_wasm_abi::encode_frame(&serde_json::json!({"path": 7}), b"");
    let with = |import: &str, frame: &[u8]| {
        Guest::new(&format!("(drop {})", call_with_frame(import, frame)))
            .frame(frame)
            .wasm()
    };
    let run = run_guests(
        idle_upstream(),
        &[
            ("garbage", with("http_request", garbage)),
            ("truncated", with("http_request", truncated)),
            ("short", with("watch", short)),
            ("huge-header", with("http_request", huge_header)),
            ("wrong-shape", with("http_request", &wrong_shape)),
            ("watch-wrong-shape", with("watch", &watch_wrong_shape)),
            (
                "out-of-bounds",
                Guest::new("(drop (call $http_request (i32.const 262000) (i32.const 1000)))")
                    .wasm(),
            ),
            (
                "overflow",
                Guest::new("(drop (call $watch (i32.const -16) (i32.const 32)))").wasm(),
            ),
            (
                "negative-len",
                Guest::new("(drop (call $http_request (i32.const 1024) (i32.const -1)))").wasm(),
            ),
            (
                "later",
                Guest::new("(drop (call $delay (i64.const 1)))")
                    .complete("(drop (call $http_request (i32.const 0x7ffffff0) (i32.const 64)))")
                    .wasm(),
            ),
            (
                "fine",
                Guest::new("(drop (call $delay (i64.const 20)))").wasm(),
            ),
        ],
    )
    .await;

    let garbage = bad_call(&run, "garbage");
    assert_eq!(garbage.import, "http_request");
    assert!(garbage.reason.contains("header is not valid"), "{garbage}");
    assert!(bad_call(&run, "truncated").reason.contains("truncated"));
    let short = bad_call(&run, "short");
    assert_eq!(short.import, "watch");
    assert!(short.reason.contains("truncated"), "{short}");
    assert!(bad_call(&run, "huge-header").reason.contains("exceeds"));
    assert!(bad_call(&run, "wrong-shape").reason.contains("method"));
    assert_eq!(bad_call(&run, "watch-wrong-shape").import, "watch");
    assert!(
        bad_call(&run, "out-of-bounds")
            .reason
            .contains("outside linear memory")
    );
    assert!(bad_call(&run, "overflow").reason.contains("overflow"));
    assert!(bad_call(&run, "negative-len").reason.contains("overflow"));
    assert_eq!(bad_call(&run, "later").import, "http_request");
    let message = run.outcome("garbage").to_string();
    assert!(
        message.contains("bad ABI call to `http_request`"),
        "{message}"
    );

    assert_eq!(run.outcome("fine"), &ModuleOutcome::Exited(0));
    assert_eq!(run.lines_of("fine"), [r#"1:{"kind":"elapsed"}"#]);
}
