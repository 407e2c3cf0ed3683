package abi

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// spec is SPEC.md, the source of truth this package is checked against.
func spec(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../kube-wasm-abi/SPEC.md")
	if err != nil {
		t.Fatalf("reading SPEC.md: %v", err)
	}
	return string(b)
}

// tableNames returns the first backticked name of each row of the table under heading
// whose first header cell is first.
func tableNames(t *testing.T, text, heading, first string) []string {
	t.Helper()
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("SPEC.md has no heading %q", heading)
	}
	section := text[start+len(heading)+2:]
	if next := strings.Index(section, "\n#"); next >= 0 {
		section = section[:next]
	}
	tick := regexp.MustCompile("`([^`]*)`")
	var names []string
	in := false
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		cell := strings.TrimSpace(cells[0])
		if !in {
			in = cell == first
			continue
		}
		if strings.HasPrefix(cell, "---") {
			continue
		}
		if m := tick.FindStringSubmatch(cell); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

func same(t *testing.T, what string, spec, code []string) {
	t.Helper()
	if strings.Join(spec, ",") != strings.Join(code, ",") {
		t.Errorf("%s: SPEC.md has %v, the package %v", what, spec, code)
	}
}

func TestNamesAreTheSpecs(t *testing.T) {
	text := spec(t)
	if !strings.Contains(text, "# The kube-wasm ABI, version 1.4\n") || Major != 1 || Minor != 4 || Version != 0x0001_0004 {
		t.Errorf("the version is not SPEC.md's 1.4")
	}
	same(t, "imports", tableNames(t, text, "## Imports (module `kube_wasm_v1`)", "import"),
		[]string{ImportHTTPRequest, ImportWatch, ImportDelay, ImportStopSignal, ImportCancel,
			ImportStreamOpen, ImportStreamSend, ImportStreamCredit})
	same(t, "exports", tableNames(t, text, "## Exports", "export"),
		[]string{ExportABIVersion, ExportAlloc, ExportComplete, ExportStart, ExportInitialize,
			ExportReactorStart, ExportWake})
	same(t, "completions", tableNames(t, text, "## Completions", "`kind`"),
		[]string{KindResponse, KindHead, KindLine, KindWatchEvent, KindEnd, KindElapsed, KindStop,
			KindOpened, KindMessage, KindClosed, KindSent, KindError})
	same(t, "error codes", tableNames(t, text, "### Error codes", "`code`"),
		[]string{CodeConnect, CodeTimeout, CodeStream, CodeTooLarge, CodeInvalidRequest, CodeUpgrade,
			CodeInternal, CodeQuota})
	same(t, "environment", tableNames(t, text, "## Environment", "variable"),
		[]string{EnvModule, EnvDefaultNamespace, EnvClusterURL})
	if !strings.Contains(text, "`1073741824` (`0x4000_0000`)") || IdleFD != 1073741824 {
		t.Errorf("IdleFD is not SPEC.md's idle descriptor")
	}
}

func TestFinalKindsAreTheSpecs(t *testing.T) {
	final := map[string]bool{}
	for _, line := range strings.Split(spec(t), "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) >= 5 && strings.HasPrefix(strings.TrimSpace(cells[0]), "`") {
			kind := strings.Trim(strings.Fields(strings.TrimSpace(cells[0]))[0], "`")
			switch strings.TrimSpace(cells[3]) {
			case "yes":
				final[kind] = true
			case "no":
				final[kind] = false
			}
		}
	}
	if len(final) != 12 {
		t.Fatalf("read %d kinds from the Completions table: %v", len(final), final)
	}
	for kind, want := range final {
		if got := (Completion{Kind: kind}).Final(); got != want {
			t.Errorf("%s: Final() = %v, SPEC.md says %v", kind, got, want)
		}
	}
}

func TestFramesRoundTrip(t *testing.T) {
	frame := EncodeFrame(HTTPRequest{Method: "GET", URI: "/api", Response: ResponseWhole}, []byte("body"))
	header, body, err := DecodeFrame(frame)
	if err != nil || !bytes.Equal(body, []byte("body")) {
		t.Fatalf("decoded %q %q %v", header, body, err)
	}
	if string(header) != `{"method":"GET","uri":"/api","headers":null,"response":"whole"}` {
		t.Errorf("header %s", header)
	}
	// The Rust crate's encoding of the same header, byte for byte (kube-wasm-abi's frame tests).
	rust := append([]byte{14, 0, 0, 0}, []byte(`{"kind":"end"}`)...)
	c, b := DecodeCompletion(rust)
	if c.Kind != KindEnd || len(b) != 0 || !c.Final() {
		t.Errorf("decoded %+v %q", c, b)
	}
}

func TestMalformedFramesAreErrorValues(t *testing.T) {
	for _, frame := range [][]byte{nil, {1, 0}, {200, 0, 0, 0, '{'}, {0, 0, 0x20, 0}, append([]byte{2, 0, 0, 0}, "{}"...), append([]byte{1, 0, 0, 0}, "["...)} {
		c, _ := DecodeCompletion(frame)
		if c.Kind != KindError || c.Code != CodeInternal || !strings.Contains(c.Message, "malformed") {
			t.Errorf("%v decoded as %+v", frame, c)
		}
	}
	if _, _, err := DecodeFrame(append([]byte{0, 0, 0x20, 0}, make([]byte, 1<<21)...)); err == nil {
		t.Errorf("a header over 1 MiB decoded")
	}
}
