package abi

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxHeaderLen is the largest frame header, in bytes: 1 MiB (SPEC.md, "Frames").
const MaxHeaderLen = 1 << 20

// ErrShortFrame is returned by [DecodeFrame] for bytes too short to hold the header they
// announce.
var ErrShortFrame = errors.New("kube-wasm frame: shorter than its header length says")

// EncodeFrame encodes header as JSON and returns the frame: its length as a little-endian
// u32, the header, then body (SPEC.md, "Frames"). It panics only if header cannot be encoded
// as JSON, which none of this package's headers can fail.
func EncodeFrame(header any, body []byte) []byte {
	h, err := json.Marshal(header)
	if err != nil {
		panic(fmt.Sprintf("kube-wasm frame: header does not encode: %v", err))
	}
	buf := make([]byte, 4, 4+len(h)+len(body))
	binary.LittleEndian.PutUint32(buf, uint32(len(h)))
	buf = append(buf, h...)
	return append(buf, body...)
}

// DecodeFrame splits a frame into its header's JSON and its body. Both alias buf.
func DecodeFrame(buf []byte) (header, body []byte, err error) {
	if len(buf) < 4 {
		return nil, nil, ErrShortFrame
	}
	n := binary.LittleEndian.Uint32(buf)
	if n > MaxHeaderLen {
		return nil, nil, fmt.Errorf("kube-wasm frame: header of %d bytes is over the limit of %d", n, MaxHeaderLen)
	}
	if uint64(len(buf)-4) < uint64(n) {
		return nil, nil, ErrShortFrame
	}
	return buf[4 : 4+n], buf[4+n:], nil
}
