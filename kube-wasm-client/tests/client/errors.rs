//! Error semantics: non-2xx responses as `Error::Api`, `get_opt`, deserialisation errors and
//! the host's error codes.

use super::support::{host_error, ok_json, response, run_one, setup, status_body};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_wasm_abi::{Completion, ErrorCode, OpError};
use kube_wasm_client::api::{Api, PostParams};
use kube_wasm_client::{Client, Error};
use serde_json::json;

fn get_answered(answer: super::support::Answer) -> Result<ConfigMap, Error> {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    run_one(&host, async move { api.get("a").await }, answer).0
}

#[test]
fn a_404_status_body_is_not_found() {
    let err = get_answered(response(
        404,
        status_body(404, "NotFound", "configmaps \"a\" not found"),
    ))
    .expect_err("404 fails");
    let Error::Api(status) = &err else {
        panic!("expected Error::Api, got {err:?}");
    };
    assert!(status.is_not_found());
    assert!(!status.is_conflict());
    assert_eq!(status.code, 404);
    assert_eq!(status.message, "configmaps \"a\" not found");
    assert_eq!(
        err.to_string(),
        format!("ApiError: configmaps \"a\" not found: NotFound ({status:?})")
    );
}

#[test]
fn a_non_status_body_is_synthesised_into_a_status() {
    let err = get_answered(response(404, "404 page not found\n")).expect_err("404 fails");
    let Error::Api(status) = err else {
        panic!("expected Error::Api");
    };
    assert_eq!(status.code, 404);
    assert_eq!(status.message, "404 page not found");
    assert_eq!(status.reason, "Failed to parse error data");
    assert!(status.is_failure());
    // kube-core 5.0's helpers look at `reason` only: a synthesised Status is not "not
    // found" even with code 404 — the same answer kube 5.0 gives.
    assert!(!status.is_not_found());
}

#[test]
fn a_409_is_a_conflict() {
    let err = get_answered(response(
        409,
        status_body(409, "Conflict", "the object has been modified"),
    ))
    .expect_err("409 fails");
    assert!(
        matches!(&err, Error::Api(s) if s.is_conflict() && !s.is_not_found()),
        "{err:?}"
    );
}

#[test]
fn a_403_from_the_host_policy_is_forbidden() {
    let err = get_answered(response(
        403,
        status_body(403, "Forbidden", "not allowed by the host"),
    ))
    .expect_err("403 fails");
    assert!(matches!(&err, Error::Api(s) if s.is_forbidden()), "{err:?}");
}

#[test]
fn a_wrong_body_is_a_serde_error() {
    let err = get_answered(ok_json(json!({"metadata": "not an object"}))).expect_err("bad body");
    assert!(matches!(err, Error::SerdeError(_)), "{err:?}");
    let err = get_answered(response(200, [0xff, 0xfe])).expect_err("not utf-8");
    assert!(matches!(err, Error::FromUtf8(_)), "{err:?}");
}

#[test]
fn get_opt_is_none_on_404_and_some_otherwise() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let (missing, _) = run_one(
        &host,
        async move { api.get_opt("gone").await },
        response(404, status_body(404, "NotFound", "gone")),
    );
    assert!(matches!(missing, Ok(None)), "{missing:?}");

    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let (found, _) = run_one(
        &host,
        async move { api.get_opt("here").await },
        ok_json(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "here"}})),
    );
    assert_eq!(
        found
            .expect("ok")
            .and_then(|cm| cm.metadata.name)
            .as_deref(),
        Some("here")
    );

    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let (forbidden, _) = run_one(
        &host,
        async move { api.get_opt("secret").await },
        response(403, status_body(403, "Forbidden", "no")),
    );
    assert!(matches!(forbidden, Err(Error::Api(s)) if s.is_forbidden()));
}

#[test]
fn already_exists_on_create() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let (out, _) = run_one(
        &host,
        async move {
            api.create(&PostParams::default(), &ConfigMap::default())
                .await
        },
        response(409, status_body(409, "AlreadyExists", "exists")),
    );
    assert!(matches!(out, Err(Error::Api(s)) if s.is_already_exists()));
}

fn service_code(err: &Error) -> Option<ErrorCode> {
    match err {
        Error::Service(source) => source.downcast_ref::<OpError>().map(|e| e.code),
        _ => None,
    }
}

#[test]
fn host_error_codes_map_to_kube_errors() {
    for code in [
        ErrorCode::Connect,
        ErrorCode::Timeout,
        ErrorCode::Stream,
        ErrorCode::Internal,
    ] {
        let err = get_answered(host_error(code)).expect_err("host error");
        assert_eq!(service_code(&err), Some(code), "{code}: {err:?}");
        assert!(err.to_string().starts_with("ServiceError: "), "{err}");
    }
    let err = get_answered(host_error(ErrorCode::TooLarge)).expect_err("too large");
    assert!(
        matches!(err, Error::LinesCodecMaxLineLengthExceeded),
        "{err:?}"
    );
    let err = get_answered(host_error(ErrorCode::InvalidRequest)).expect_err("invalid");
    assert!(matches!(err, Error::BuildRequest(_)), "{err:?}");
}

#[test]
fn an_unknown_error_code_from_a_newer_host_is_a_service_error() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let mut task = host.spawn(async move { api.get("a").await });
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    let frame = kube_wasm_abi::encode_frame(
        &json!({"kind": "error", "code": "quota_exceeded", "message": "m"}),
        b"",
    );
    host.complete_raw(id, frame, true);
    let err = task.output().expect("finished").expect_err("fails");
    assert_eq!(service_code(&err), Some(ErrorCode::Unknown));
}

#[test]
fn a_malformed_completion_is_a_service_error_not_a_panic() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let mut task = host.spawn(async move { api.get("a").await });
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    host.complete_raw(id, vec![0xff, 0xff, 0xff, 0xff, 1, 2], true);
    let err = task.output().expect("finished").expect_err("fails");
    assert_eq!(service_code(&err), Some(ErrorCode::Internal));
}

#[test]
fn a_completion_of_the_wrong_kind_is_a_service_error() {
    let err = get_answered(vec![(Completion::End {}, Vec::new())]).expect_err("bad kind");
    assert_eq!(service_code(&err), Some(ErrorCode::Internal), "{err:?}");
}

#[test]
fn dropping_a_request_cancels_it_on_the_host() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let task = host.spawn(async move { api.get("slow").await });
    host.run_until_stalled();
    let id = host.take_submitted()[0].id();
    assert_eq!(host.live(), [id]);
    task.abort();
    host.run_until_stalled();
    assert_eq!(host.cancelled(), [id]);
    assert!(host.live().is_empty());
}

#[test]
fn a_finished_request_is_not_cancelled() {
    let (host, client) = setup();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let _ = run_one(
        &host,
        async move { api.get("a").await },
        response(404, status_body(404, "NotFound", "x")),
    );
    assert!(host.cancelled().is_empty());
    assert!(host.live().is_empty());
}

#[test]
fn try_default_without_a_host_environment_fails_with_infer_config() {
    // This test binary never sets KUBE_WASM_CLUSTER_URL (tests/env.rs does, in its own
    // process).
    let (host, _) = setup();
    let mut task = host.spawn(Client::try_default());
    host.run_until_stalled();
    let Some(Err(err)) = task.output() else {
        panic!("try_default must fail without KUBE_WASM_CLUSTER_URL");
    };
    assert!(matches!(err, Error::InferConfig(_)), "{err:?}");
    assert!(err.to_string().contains("KUBE_WASM_CLUSTER_URL"), "{err}");
}
