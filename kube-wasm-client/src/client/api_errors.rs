//! Turning a non-2xx response into [`Error::Api`], as kube 5.0's `handle_api_errors`.

use crate::{Error, Result};
use kube_core::Status;

/// Checks a response status, as kube 5.0 does before reading a body.
///
/// A 4xx or 5xx status becomes [`Error::Api`]: the body (UTF-8, else [`Error::FromUtf8`])
/// parsed as a `Status` when it parses — note that, as in kube, any JSON object does, its
/// missing fields defaulted — otherwise a failure `Status` synthesised from the trimmed body
/// text as `message`, reason `"Failed to parse error data"` and the HTTP status as `code`.
/// Every other status passes.
///
/// Note that kube-core 5.0's `Status::is_not_found()`, `is_conflict()` … match on the
/// `reason` only (their code fallback applies to unknown reasons, and the reasons they test
/// are all known), so a synthesised `Status` answers them with `false`, exactly as in kube;
/// its `code` carries the HTTP status.
pub(crate) fn check_status(status: http::StatusCode, body: &[u8]) -> Result<()> {
    if !(status.is_client_error() || status.is_server_error()) {
        return Ok(());
    }
    let text = String::from_utf8(body.to_vec()).map_err(Error::FromUtf8)?;
    let status = match serde_json::from_str::<Status>(&text) {
        Ok(parsed) => parsed,
        Err(_) => {
            Status::failure(text.trim(), "Failed to parse error data").with_code(status.as_u16())
        }
    };
    Err(Error::Api(status.boxed()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    #[test]
    fn success_and_redirects_pass() {
        for code in [200, 201, 204, 301] {
            let status = StatusCode::from_u16(code).expect("valid code");
            assert!(check_status(status, b"not json").is_ok(), "{code}");
        }
    }

    #[test]
    fn status_body_is_parsed() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","code":404}"#;
        let Err(Error::Api(status)) = check_status(StatusCode::NOT_FOUND, body) else {
            panic!("404 is an Api error");
        };
        assert!(status.is_not_found());
        assert_eq!(status.message, "configmaps \"x\" not found");
    }

    #[test]
    fn text_body_is_synthesised() {
        let Err(Error::Api(status)) = check_status(StatusCode::CONFLICT, b"  conflict!\n") else {
            panic!("409 is an Api error");
        };
        assert_eq!(status.code, 409);
        assert_eq!(status.message, "conflict!");
        assert_eq!(status.reason, "Failed to parse error data");
        assert!(status.is_failure());
    }

    #[test]
    fn invalid_utf8_is_from_utf8() {
        assert!(matches!(
            check_status(StatusCode::BAD_GATEWAY, &[0xff, 0xfe]),
            Err(Error::FromUtf8(_))
        ));
    }
}
