package kubewasm

import "fmt"

// OpError is an operation the host could not carry out: an "error" completion (SPEC.md,
// "Error codes") — the API server unreachable ("connect"), a time limit of the host's
// client ("timeout"), a watch broken off ("stream"), and so on. The transport returns it
// where a native transport returns its network error, so client-go sees it as it sees a
// failed connection: wrapped in a *url.Error, retried and backed off the same way.
//
// An answer of the API server, a 403, 429 or 410 among them (and the host's own 403 for a
// request its permissions deny, or 429 for one over a quota), is no OpError: it is an HTTP
// response, from which client-go builds the same StatusError it builds natively.
type OpError struct {
	// Code is the ABI's error code (one of abi's Code constants, or a newer host's).
	Code string
	// Message is the host's description.
	Message string
}

func (e *OpError) Error() string {
	return fmt.Sprintf("kube-wasm host: %s: %s", e.Code, e.Message)
}

// Timeout reports whether the host's time limit ran out, as net.Error's Timeout does.
func (e *OpError) Timeout() bool { return e.Code == "timeout" }

// Temporary reports whether the failure may pass: every code but invalid_request.
func (e *OpError) Temporary() bool { return e.Code != "invalid_request" }
