//! How a failure the host reports (an ABI `error` completion) becomes an [`Error`]: the
//! error-code table of SPEC.md, "Error codes", in one place.

use crate::Error;
use kube_wasm_abi::{ErrorCode, OpError};

/// Where the failure happened; only the `stream` code depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Before a response was available: a whole-body request, or the start of a
    /// `lines`-mode request.
    Request,
    /// While an event stream was being read (a watch, or a `lines` body after its head).
    Stream,
}

/// Maps a host failure to the [`Error`] kube 5.0 would give for the same situation:
///
/// | code | error |
/// | --- | --- |
/// | `connect`, `timeout`, `internal`, unknown | [`Error::Service`] |
/// | `upgrade` | [`Error::Service`] here; `Client::connect` turns the checks it knows into `Error::UpgradeConnection` first |
/// | `stream` | [`Error::ReadEvents`] in [`Phase::Stream`], else [`Error::Service`] |
/// | `too_large` | [`Error::LinesCodecMaxLineLengthExceeded`] |
/// | `invalid_request` | [`Error::BuildRequest`] (a `Validation` error carrying the message) |
///
/// The host's [`OpError`] is kept as the source of `Service` and `ReadEvents`.
pub(crate) fn from_op_error(error: OpError, phase: Phase) -> Error {
    match error.code {
        ErrorCode::Stream if phase == Phase::Stream => {
            Error::ReadEvents(std::io::Error::other(error))
        }
        ErrorCode::TooLarge => Error::LinesCodecMaxLineLengthExceeded,
        ErrorCode::InvalidRequest => Error::BuildRequest(kube_core::request::Error::Validation(
            format!("the host could not build the request: {}", error.message),
        )),
        ErrorCode::Connect
        | ErrorCode::Timeout
        | ErrorCode::Stream
        | ErrorCode::Internal
        | ErrorCode::Upgrade
        | ErrorCode::Quota
        | ErrorCode::Unknown => Error::Service(Box::new(error)),
    }
}

/// The error for a completion that breaks the ABI's rules for the op (e.g. a `head` for a
/// whole-body request, or an op that ended without a final completion): an
/// [`Error::Service`] wrapping an `internal` [`OpError`], so it reads like any other host
/// failure.
pub(crate) fn protocol_violation(what: impl std::fmt::Display) -> Error {
    Error::Service(Box::new(OpError::new(
        ErrorCode::Internal,
        format!("unexpected answer from the host: {what}"),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(code: ErrorCode, phase: Phase) -> Error {
        from_op_error(OpError::new(code, "detail"), phase)
    }

    fn service_code(e: &Error) -> Option<ErrorCode> {
        match e {
            Error::Service(source) => source.downcast_ref::<OpError>().map(|o| o.code),
            _ => None,
        }
    }

    #[test]
    fn service_codes_keep_the_host_error() {
        for code in [
            ErrorCode::Connect,
            ErrorCode::Timeout,
            ErrorCode::Internal,
            ErrorCode::Upgrade,
            ErrorCode::Unknown,
        ] {
            for phase in [Phase::Request, Phase::Stream] {
                assert_eq!(
                    service_code(&map(code, phase)),
                    Some(code),
                    "{code} {phase:?}"
                );
            }
        }
    }

    #[test]
    fn stream_depends_on_the_phase() {
        assert_eq!(
            service_code(&map(ErrorCode::Stream, Phase::Request)),
            Some(ErrorCode::Stream)
        );
        let Error::ReadEvents(io) = map(ErrorCode::Stream, Phase::Stream) else {
            panic!("stream errors in a stream are ReadEvents");
        };
        assert_eq!(io.kind(), std::io::ErrorKind::Other);
        let inner = io.get_ref().and_then(|e| e.downcast_ref::<OpError>());
        assert_eq!(inner.map(|o| o.code), Some(ErrorCode::Stream));
    }

    #[test]
    fn too_large_and_invalid_request() {
        for phase in [Phase::Request, Phase::Stream] {
            assert!(matches!(
                map(ErrorCode::TooLarge, phase),
                Error::LinesCodecMaxLineLengthExceeded
            ));
            let Error::BuildRequest(kube_core::request::Error::Validation(msg)) =
                map(ErrorCode::InvalidRequest, phase)
            else {
                panic!("invalid_request is BuildRequest");
            };
            assert!(msg.contains("detail"), "{msg}");
        }
    }
}
