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

// TestPlotsDefaultDir: without a directory the plots go to a plots
// folder beside the results file, never among the results files.
func TestPlotsDefaultDir(t *testing.T) {
	dir := t.TempDir()
	f := readTestdata(t, "retpoline.txt")[0]
	data, err := os.ReadFile(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	f.Path = filepath.Join(dir, "run.txt")
	if err := os.WriteFile(f.Path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	written, err := Write(f, "")
	if err != nil || len(written) == 0 {
		t.Fatalf("Write: %v, %v", written, err)
	}
	for _, w := range written {
		if filepath.Dir(w) != filepath.Join(dir, "plots") {
			t.Errorf("wrote %s, want it in %s", w, filepath.Join(dir, "plots"))
		}
	}
	if svgs, _ := filepath.Glob(filepath.Join(dir, "*.svg")); len(svgs) != 0 {
		t.Errorf("plots beside the results file: %v", svgs)
	}
}
