package plots

import (
	"os"
	"path/filepath"
	"testing"

	"bpfbench/results/benchfile"
)

// TestKernelFigure: two instruction-counting kernels make the kernel plot,
// in version order, readable; one kernel, or timed files, make none.
func TestKernelFigure(t *testing.T) {
	a := readTestdata(t, "icount-7.0.txt")[0]
	b := readTestdata(t, "icount-6.12.txt")[0]
	timed := readTestdata(t, "retpoline.txt")[0]
	if _, ok, err := kernelFigure([]*benchfile.File{a, timed}); ok || err != nil {
		t.Errorf("one instruction-counting kernel drew a kernel plot (err %v)", err)
	}
	fig, ok, err := kernelFigure([]*benchfile.File{a, b, timed})
	if err != nil || !ok {
		t.Fatalf("two kernels: no kernel plot (err %v)", err)
	}
	ticks := fig.panels[0].p.X.Tick.Marker.Ticks(0, 1)
	if len(ticks) != 2 || ticks[0].Label != "6.12.117" || ticks[1].Label[:3] != "7.0" {
		t.Errorf("kernels on the axis: %+v, want 6.12.117 then 7.0.x", ticks)
	}
	svg, err := fig.render()
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range checkSVG(svg) {
		t.Errorf("kernel plot: %s", problem)
	}
	dir := t.TempDir()
	path, err := WriteKernels([]*benchfile.File{b, a}, dir)
	if err != nil || path != filepath.Join(dir, "icount-kernels.svg") {
		t.Fatalf("WriteKernels = %q, %v", path, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Error(err)
	}
}
