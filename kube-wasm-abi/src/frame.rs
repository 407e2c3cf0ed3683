//! The frame: how every envelope is laid out in memory (SPEC.md, "Frames").
//!
//! ```text
//! +----------------------+----------------------------+---------------------------+
//! | header length: u32LE | header: UTF-8 JSON object  | body: raw bytes to the end |
//! +----------------------+----------------------------+---------------------------+
//! ```

use serde::{Serialize, de::DeserializeOwned};

/// Largest header a frame may carry, in bytes. Headers hold a method, a path and HTTP
/// headers; anything bigger is a malformed frame.
pub const MAX_HEADER_LEN: usize = 1024 * 1024;

/// Length of the fixed prefix that holds the header length, in bytes.
pub const PREFIX_LEN: usize = 4;

/// A decoded frame: its typed header and a view of its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<'a, H> {
    /// The JSON header, deserialised.
    pub header: H,
    /// The raw body: everything after the header, possibly empty.
    pub body: &'a [u8],
}

/// Why bytes are not a valid frame.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Fewer than [`PREFIX_LEN`] bytes, or fewer than the prefix says the header has.
    #[error("frame truncated: {len} bytes, header needs {needed}")]
    Truncated {
        /// Bytes available.
        len: usize,
        /// Bytes the prefix and header need.
        needed: usize,
    },
    /// The header length exceeds [`MAX_HEADER_LEN`].
    #[error("frame header of {0} bytes exceeds the limit of {MAX_HEADER_LEN} bytes")]
    HeaderTooLarge(usize),
    /// The header is not a JSON object of the expected shape.
    #[error("frame header is not valid: {0}")]
    Header(#[from] serde_json::Error),
}

/// Encodes `header` as JSON followed by `body` into one frame.
///
/// # Panics
/// Never for the ABI's own header types; a header whose `Serialize` impl fails (only possible
/// for maps with non-string keys) yields an empty JSON object instead.
pub fn encode_frame(header: &impl Serialize, body: &[u8]) -> Vec<u8> {
    let json = serde_json::to_vec(header).unwrap_or_else(|_| b"{}".to_vec());
    let mut out = Vec::with_capacity(PREFIX_LEN + json.len() + body.len());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(body);
    out
}

/// Decodes a frame whose header has type `H`. The body borrows from `bytes`.
///
/// # Errors
/// [`FrameError`] if the bytes are truncated, the header is too large, or the header does not
/// deserialise as `H`. Never panics, whatever the input.
pub fn decode_frame<H: DeserializeOwned>(bytes: &[u8]) -> Result<Frame<'_, H>, FrameError> {
    let Some(prefix) = bytes.first_chunk::<PREFIX_LEN>() else {
        return Err(FrameError::Truncated {
            len: bytes.len(),
            needed: PREFIX_LEN,
        });
    };
    let header_len = u32::from_le_bytes(*prefix) as usize;
    if header_len > MAX_HEADER_LEN {
        return Err(FrameError::HeaderTooLarge(header_len));
    }
    let rest = &bytes[PREFIX_LEN..];
    if rest.len() < header_len {
        return Err(FrameError::Truncated {
            len: bytes.len(),
            needed: PREFIX_LEN + header_len,
        });
    }
    let (header, body) = rest.split_at(header_len);
    Ok(Frame {
        header: serde_json::from_slice(header)?,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Completion, HttpRequest, ResponseMode};

    #[test]
    fn round_trips_header_and_raw_body() {
        let req = HttpRequest {
            method: "PATCH".into(),
            uri: "/api/v1/namespaces/default/configmaps/a?fieldManager=x".into(),
            headers: vec![("content-type".into(), "application/merge-patch+json".into())],
            response: ResponseMode::Whole,
        };
        let body = b"{\"data\":{\"k\":\"\\u0000v\"}}\xff\x00";
        let bytes = encode_frame(&req, body);
        let frame = decode_frame::<HttpRequest>(&bytes).expect("valid frame");
        assert_eq!(frame.header, req);
        assert_eq!(frame.body, body);
    }

    #[test]
    fn empty_body_is_allowed() {
        let bytes = encode_frame(&Completion::End {}, &[]);
        let frame = decode_frame::<Completion>(&bytes).expect("valid frame");
        assert_eq!(frame.header, Completion::End {});
        assert!(frame.body.is_empty());
    }

    #[test]
    fn truncated_and_oversized_frames_are_errors() {
        assert!(matches!(
            decode_frame::<Completion>(&[1, 0]),
            Err(FrameError::Truncated { len: 2, needed: 4 })
        ));
        assert!(matches!(
            decode_frame::<Completion>(&[10, 0, 0, 0, b'{']),
            Err(FrameError::Truncated { len: 5, needed: 14 })
        ));
        assert!(matches!(
            decode_frame::<Completion>(&u32::MAX.to_le_bytes()),
            Err(FrameError::HeaderTooLarge(_))
        ));
    }

    #[test]
    fn garbage_header_is_an_error_not_a_panic() {
        let mut bytes = 3u32.to_le_bytes().to_vec();
        bytes.extend_from_slice(b"{x}");
        assert!(matches!(
            decode_frame::<Completion>(&bytes),
            Err(FrameError::Header(_))
        ));
        let bytes = encode_frame(&serde_json::json!({"kind": "no_such_kind"}), b"");
        assert!(decode_frame::<Completion>(&bytes).is_err());
        // Every prefix of a valid frame either decodes or errors; none panics.
        let full = encode_frame(
            &Completion::Response {
                status: 200,
                headers: vec![],
            },
            b"abc",
        );
        for cut in 0..full.len() {
            let _ = decode_frame::<Completion>(&full[..cut]);
        }
    }
}
