//! One completion as the guest received it from the host, decoded.

use kube_wasm_abi::{Completion, ErrorCode, OpError, decode_frame};

/// One completion as the guest received it: the decoded header and the frame's raw body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// What happened.
    pub completion: Completion,
    buf: Vec<u8>,
    body_start: usize,
}

impl Delivery {
    /// Decodes a completion frame received from the host. A frame that does not decode
    /// becomes an `internal` error completion — a value for the op's owner, not a trap.
    pub fn from_frame(buf: Vec<u8>) -> Self {
        match decode_frame::<Completion>(&buf) {
            Ok(frame) => {
                let body_start = buf.len() - frame.body.len();
                Self {
                    completion: frame.header,
                    buf,
                    body_start,
                }
            }
            Err(e) => Self::new(
                Completion::Error(OpError::new(
                    ErrorCode::Internal,
                    format!("malformed completion from the host: {e}"),
                )),
                Vec::new(),
            ),
        }
    }

    /// A delivery with the given completion and body.
    pub fn new(completion: Completion, body: Vec<u8>) -> Self {
        Self {
            completion,
            buf: body,
            body_start: 0,
        }
    }

    /// The frame's body: a response body, one watch event, one line, or empty.
    pub fn body(&self) -> &[u8] {
        &self.buf[self.body_start..]
    }

    /// The body, owned.
    pub fn into_body(mut self) -> Vec<u8> {
        self.buf.drain(..self.body_start);
        self.buf
    }
}
