package kubewasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"kube-wasm.dev/go/abi"
)

// Transport is an http.RoundTripper whose requests are ops of the kube-wasm host: each
// request to the API server is an http_request op answered with the whole response, and
// each watch (a GET with watch=true) a watch op whose events stream through the response
// body. The host adds the credentials, checks the module's permissions and quotas, and may
// serve a watch from the watch it shares with other modules; none of that shows here.
//
// Cancellation follows the request's context: when it ends before the response, RoundTrip
// cancels the op and returns the context's error; when it ends while a watch streams, the
// body's Read returns the context's error and the watch is closed, as it is on Close.
type Transport struct {
	reactor *Reactor
}

var _ http.RoundTripper = (*Transport)(nil)

// NewTransport returns the transport of r's ops.
func NewTransport(r *Reactor) *Transport { return &Transport{reactor: r} }

// httpRequest is the issue function of an http_request op.
func (t *Transport) httpRequest(header abi.HTTPRequest, body []byte) func() abi.OpID {
	frame := abi.EncodeFrame(header, body)
	return func() abi.OpID { return t.reactor.host.HTTPRequest(frame) }
}

// RoundTrip sends req through the host. Only the request's path and query are used: the
// host speaks to the API server it is configured with.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var o *op
	if watch, ok := watchOf(req); ok {
		frame := abi.EncodeFrame(watch, nil)
		o = t.reactor.start(func() abi.OpID { return t.reactor.host.Watch(frame) })
		return t.streamed(ctx, req, o)
	}
	header := abi.HTTPRequest{
		Method:   req.Method,
		URI:      req.URL.RequestURI(),
		Headers:  headersOf(req.Header),
		Response: abi.ResponseWhole,
	}
	if isWatch(req) {
		// A watch the watch op cannot express: its lines, streamed all the same.
		header.Response = abi.ResponseLines
		o = t.reactor.start(t.httpRequest(header, body))
		return t.streamed(ctx, req, o)
	}
	o = t.reactor.start(t.httpRequest(header, body))
	d, err := t.first(ctx, o)
	if err != nil {
		return nil, err
	}
	switch d.Completion.Kind {
	case abi.KindResponse:
		return response(req, d.Completion, io.NopCloser(bytes.NewReader(d.Body)), int64(len(d.Body))), nil
	default:
		o.close()
		return nil, fmt.Errorf("kube-wasm host: unexpected %q completion for a request", d.Completion.Kind)
	}
}

// first waits for an op's first completion; an error completion is returned as an
// *OpError, and the op is closed on any error.
func (t *Transport) first(ctx context.Context, o *op) (Delivery, error) {
	d, err := o.next(ctx)
	if err != nil {
		o.close()
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Delivery{}, err
	}
	if d.Completion.Kind == abi.KindError {
		o.close()
		return Delivery{}, &OpError{Code: d.Completion.Code, Message: d.Completion.Message}
	}
	return d, nil
}

// streamed answers a watch op, or a request in lines mode: a refusal as a whole response,
// an established stream as a response whose body yields each event or line, newline
// terminated, as the API server's chunks carry them.
func (t *Transport) streamed(ctx context.Context, req *http.Request, o *op) (*http.Response, error) {
	d, err := t.first(ctx, o)
	if err != nil {
		return nil, err
	}
	switch d.Completion.Kind {
	case abi.KindResponse:
		return response(req, d.Completion, io.NopCloser(bytes.NewReader(d.Body)), int64(len(d.Body))), nil
	case abi.KindHead:
		resp := response(req, d.Completion, &streamBody{ctx: ctx, op: o}, -1)
		if _, watchOp := watchOf(req); watchOp {
			// The host sends each event as JSON, whatever the request accepted.
			resp.Header.Set("Content-Type", "application/json")
		}
		return resp, nil
	default:
		o.close()
		return nil, fmt.Errorf("kube-wasm host: unexpected %q completion for a watch", d.Completion.Kind)
	}
}

func response(req *http.Request, c abi.Completion, body io.ReadCloser, length int64) *http.Response {
	header := make(http.Header, len(c.Headers))
	for _, kv := range c.Headers {
		header.Add(kv[0], kv[1])
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", c.Status, http.StatusText(c.Status)),
		StatusCode:    c.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          body,
		ContentLength: length,
		Request:       req,
	}
}

func headersOf(h http.Header) [][2]string {
	out := make([][2]string, 0, len(h))
	for name, values := range h {
		for _, v := range values {
			out = append(out, [2]string{strings.ToLower(name), v})
		}
	}
	return out
}

// streamBody is the body of a watch (or lines-mode) response: each Read waits for the next
// event from the host.
type streamBody struct {
	ctx    context.Context
	op     *op
	rest   []byte
	err    error
	closed bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	for len(b.rest) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		d, err := b.op.next(b.ctx)
		switch {
		case err != nil:
			b.fail(err)
		case d.Completion.Kind == abi.KindWatchEvent || d.Completion.Kind == abi.KindLine:
			b.rest = append(d.Body, '\n')
		case d.Completion.Kind == abi.KindEnd:
			b.fail(io.EOF)
		case d.Completion.Kind == abi.KindError:
			b.fail(&OpError{Code: d.Completion.Code, Message: d.Completion.Message})
		default:
			b.fail(fmt.Errorf("kube-wasm host: unexpected %q completion in a stream", d.Completion.Kind))
		}
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

// fail ends the stream with err, closing the op unless the host finished it.
func (b *streamBody) fail(err error) {
	b.err = err
	b.op.close()
}

// Close closes the watch: the host closes it upstream.
func (b *streamBody) Close() error {
	if !b.closed {
		b.closed = true
		b.op.close()
		if b.err == nil {
			b.err = errors.New("kube-wasm: read on a closed watch")
		}
	}
	return nil
}
