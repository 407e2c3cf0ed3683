package abi

import (
	"encoding/json"
	"fmt"
)

// OpID identifies one operation of one module: issued by the host, never 0, never reused
// while the module lives.
type OpID = uint64

// HTTPRequest is the header of an http_request frame; the frame's body is the request body.
type HTTPRequest struct {
	// Method is the HTTP method, upper case.
	Method string `json:"method"`
	// URI is the path and query relative to the API server root; it starts with "/".
	URI string `json:"uri"`
	// Headers are the request headers as [name, value] pairs, in order. The host drops
	// those that carry an identity and user-agent.
	Headers [][2]string `json:"headers"`
	// Response is how the response comes back: ResponseWhole or ResponseLines.
	Response string `json:"response"`
}

// How an http_request's response comes back (HTTPRequest.Response).
const (
	// ResponseWhole: one final "response" completion with the whole body.
	ResponseWhole = "whole"
	// ResponseLines: for a 2xx status, "head", one "line" per line, then "end".
	ResponseLines = "lines"
)

// WatchRequest is the header of a watch frame (its body is empty): a Kubernetes watch of
// one collection, by its parts, as kube-core's Request::watch takes them.
type WatchRequest struct {
	// Path is the collection path, no query.
	Path string `json:"path"`
	// LabelSelector is labelSelector, if any.
	LabelSelector *string `json:"label_selector"`
	// FieldSelector is fieldSelector, if any.
	FieldSelector *string `json:"field_selector"`
	// TimeoutSeconds is timeoutSeconds; nil: the host sends 290.
	TimeoutSeconds *uint32 `json:"timeout_seconds"`
	// Bookmarks is allowWatchBookmarks.
	Bookmarks bool `json:"bookmarks"`
	// SendInitialEvents is sendInitialEvents (with resourceVersionMatch=NotOlderThan).
	SendInitialEvents bool `json:"send_initial_events"`
	// ResourceVersion is the resourceVersion to watch from.
	ResourceVersion string `json:"resource_version"`
	// MetadataOnly asks for PartialObjectMetadata instead of whole objects.
	MetadataOnly bool `json:"metadata_only"`
}

// The completion kinds (SPEC.md, "Completions").
const (
	KindResponse   = "response"
	KindHead       = "head"
	KindLine       = "line"
	KindWatchEvent = "watch_event"
	KindEnd        = "end"
	KindElapsed    = "elapsed"
	KindStop       = "stop"
	KindOpened     = "opened"
	KindMessage    = "message"
	KindClosed     = "closed"
	KindSent       = "sent"
	KindError      = "error"
)

// Completion is the header of a completion frame: its Kind and the fields of that kind.
type Completion struct {
	// Kind is one of the Kind constants; a kind this SDK does not know is final.
	Kind string `json:"kind"`
	// Status is the HTTP status of a "response" or "head".
	Status int `json:"status,omitempty"`
	// Headers are the response headers of a "response" or "head".
	Headers [][2]string `json:"headers,omitempty"`
	// Code is an "error"'s code (one of the Code constants, or a newer host's).
	Code string `json:"code,omitempty"`
	// Message is an "error"'s description.
	Message string `json:"message,omitempty"`
}

// Final reports whether the completion finishes its op: every kind but head, line,
// watch_event, opened and message.
func (c Completion) Final() bool {
	switch c.Kind {
	case KindHead, KindLine, KindWatchEvent, KindOpened, KindMessage:
		return false
	}
	return true
}

// The error codes of an "error" completion (SPEC.md, "Error codes"); a guest reads any
// other string as a newer host's, like CodeInternal.
const (
	CodeConnect        = "connect"
	CodeTimeout        = "timeout"
	CodeStream         = "stream"
	CodeTooLarge       = "too_large"
	CodeInvalidRequest = "invalid_request"
	CodeUpgrade        = "upgrade"
	CodeInternal       = "internal"
	CodeQuota          = "quota"
)

// DecodeCompletion decodes a completion frame from the host. A frame that does not decode
// is read as an "error" completion of code "internal", a value for the op's owner (as
// kube-wasm-guest reads it), never a panic.
func DecodeCompletion(frame []byte) (Completion, []byte) {
	header, body, err := DecodeFrame(frame)
	if err != nil {
		return malformed(err), nil
	}
	var c Completion
	if err := json.Unmarshal(header, &c); err != nil || c.Kind == "" {
		if err == nil {
			err = fmt.Errorf("no kind")
		}
		return malformed(err), nil
	}
	return c, body
}

func malformed(err error) Completion {
	return Completion{Kind: KindError, Code: CodeInternal, Message: "malformed completion from the host: " + err.Error()}
}
