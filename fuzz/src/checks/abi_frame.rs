//! Frames (SPEC.md, "Frames") as `kube_wasm_abi::decode_frame` reads them, with every header
//! type of the ABI: decoding never panics; a decoded frame's body is exactly the bytes after
//! the header its prefix announces; a frame re-encoded from what was decoded decodes to the
//! same header and body; every error says truly why.

use std::fmt::Debug;

use kube_wasm_abi::frame::{MAX_HEADER_LEN, PREFIX_LEN};
use kube_wasm_abi::{
    Completion, FrameError, HttpRequest, StreamOpen, StreamSend, WatchRequest, decode_frame,
    encode_frame,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Checks `data` as a frame of each header type.
pub fn run(data: &[u8]) {
    round_trip::<HttpRequest>(data);
    round_trip::<WatchRequest>(data);
    round_trip::<StreamOpen>(data);
    round_trip::<StreamSend>(data);
    round_trip::<Completion>(data);
}

fn round_trip<H: Serialize + DeserializeOwned + PartialEq + Debug>(data: &[u8]) {
    let announced = data
        .first_chunk::<PREFIX_LEN>()
        .map(|prefix| u32::from_le_bytes(*prefix) as usize);
    match decode_frame::<H>(data) {
        Ok(frame) => {
            let header_len = announced.expect("a decoded frame has a prefix");
            assert!(header_len <= MAX_HEADER_LEN);
            assert_eq!(frame.body, &data[PREFIX_LEN + header_len..]);
            let again = encode_frame(&frame.header, frame.body);
            let decoded = decode_frame::<H>(&again).expect("a re-encoded frame decodes");
            assert_eq!(decoded.header, frame.header);
            assert_eq!(decoded.body, frame.body);
        }
        Err(FrameError::Truncated { len, needed }) => {
            assert_eq!(len, data.len());
            assert!(len < needed, "truncated: {len} bytes, needs {needed}");
        }
        Err(FrameError::HeaderTooLarge(len)) => {
            assert_eq!(Some(len), announced);
            assert!(len > MAX_HEADER_LEN);
        }
        Err(FrameError::Header(_)) => {
            let header_len = announced.expect("a bad header has a prefix");
            assert!(PREFIX_LEN + header_len <= data.len());
        }
    }
}
