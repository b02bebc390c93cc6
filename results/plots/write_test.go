package plots

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestPlots(t *testing.T) {
	dir := t.TempDir()
	files := readTestdata(t, "retpoline.txt", "mitigations-off.txt")
	written, err := Write(files[0], dir)
	if err != nil {
		t.Fatal(err)
	}
	var base []string
	for _, w := range written {
		base = append(base, filepath.Base(w))
	}
	want := []string{"retpoline-dispatcher.svg", "retpoline-trampoline.svg", "retpoline-freplace.svg", "retpoline-tailcall.svg", "retpoline-attach.svg"}
	if !slices.Equal(base, want) {
		t.Errorf("wrote %v, want %v", base, want)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "retpoline-dispatcher.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"ns/op over k0", "full (48)", "fill=generic", "indirect call, no dispatcher"} {
		if !bytes.Contains(svg, []byte(label)) {
			t.Errorf("dispatcher plot lacks %q", label)
		}
	}
	svg, err = os.ReadFile(filepath.Join(dir, "retpoline-tailcall.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte(">call=tailcall<")) || bytes.Contains(svg, []byte("hops=1")) {
		t.Error("the tail-call plot does not draw the chain as one line named call=tailcall")
	}
	// The mitigations=off file has only the baseline and prog=tc: no curve.
	if written, err := Write(files[1], dir); err != nil || len(written) != 0 {
		t.Errorf("plots of a file without curves: %v, %v", written, err)
	}
}

// TestPlotsNeedADir: without a directory no plot is written, beside
// the results file or anywhere.
func TestPlotsNeedADir(t *testing.T) {
	f := readTestdata(t, "retpoline.txt")[0]
	if written, err := Write(f, ""); err == nil || len(written) != 0 {
		t.Errorf("Write without a directory: %v, %v; want an error and nothing written", written, err)
	}
}
