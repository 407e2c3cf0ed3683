package kubewasm

import (
	"net/http"
	"strconv"
	"strings"

	"kube-wasm.dev/go/abi"
)

// isWatch reports whether req is a watch: a GET whose query says watch=true (or 1), as
// client-go's Watch sends it.
func isWatch(req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// watchOf reads a watch request as the header of a watch op, so that the host can serve
// it from a shared watch; false when it is no watch, or asks for what the op cannot express
// (then it goes to the host as a request whose lines stream back).
//
// client-go sends, besides watch=true: resourceVersion, labelSelector, fieldSelector,
// timeoutSeconds, allowWatchBookmarks, sendInitialEvents with resourceVersionMatch
// NotOlderThan, and timeout (its own request timeout, not a server parameter). A
// PartialObjectMetadata Accept header (the metadata informers') is the op's metadata_only.
func watchOf(req *http.Request) (abi.WatchRequest, bool) {
	if !isWatch(req) {
		return abi.WatchRequest{}, false
	}
	w := abi.WatchRequest{Path: req.URL.Path}
	for key, values := range req.URL.Query() {
		if len(values) != 1 {
			return abi.WatchRequest{}, false
		}
		v := values[0]
		switch key {
		case "watch", "timeout":
		case "resourceVersion":
			w.ResourceVersion = v
		case "labelSelector":
			w.LabelSelector = &v
		case "fieldSelector":
			w.FieldSelector = &v
		case "timeoutSeconds":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return abi.WatchRequest{}, false
			}
			s := uint32(n)
			w.TimeoutSeconds = &s
		case "allowWatchBookmarks":
			w.Bookmarks = v == "true"
		case "sendInitialEvents":
			w.SendInitialEvents = v == "true"
		case "resourceVersionMatch":
			if v != "NotOlderThan" {
				return abi.WatchRequest{}, false
			}
		default:
			return abi.WatchRequest{}, false
		}
	}
	if strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata") {
		w.MetadataOnly = true
	}
	return w, true
}
