package plots

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"bpfbench/results/benchfile"

	"gonum.org/v1/plot"
)

// A mechanism is one path whose instruction count the kernel plot follows
// across kernels: a sub-benchmark and the unit it is read in.
type mechanism struct {
	label, name, unit string
}

// kernelPanels are the kernel plot's panels: the short paths, and the
// trampolines, whose counts are ten times larger.
var kernelPanels = []struct {
	title string
	mechs []mechanism
}{
	{"short paths: instructions added to one XDP run", []mechanism{
		{"XDP parse - drop", "BenchmarkXDP/prog=parse/size=64", "delta-instrs/op"},
		{"dispatcher k16 - k0 (native)", "BenchmarkDispatcher/dispatcher=k16/fill=native/prog=xdp", "delta-instrs/op"},
		{"dispatcher full - k0 (fallback)", "BenchmarkDispatcher/dispatcher=full/fill=native/prog=xdp", "delta-instrs/op"},
		{"tail call, per call (1 hop)", "BenchmarkCall/call=tailcall/hops=1", "instrs/call"},
		{"freplace, per link of 10", "BenchmarkTrampoline/target=xdp/attach=freplace/chain=10", "delta-instrs/prog"},
	}},
	{"trampolines: instructions added by one attached program", []mechanism{
		{"fentry/1 on XDP", "BenchmarkTrampoline/target=xdp/attach=fentry/progs=1", "delta-instrs/op"},
		{"fexit/1 on XDP", "BenchmarkTrampoline/target=xdp/attach=fexit/progs=1", "delta-instrs/op"},
		{"fentry/1 on a kernel function", "BenchmarkTrampoline/target=helper/attach=fentry/progs=1", "delta-instrs/op"},
		{"fexit/1 on a kernel function", "BenchmarkTrampoline/target=helper/attach=fexit/progs=1", "delta-instrs/op"},
		{"fmod_ret/1 on a kfunc", "BenchmarkTrampoline/target=kfunc/attach=fmod_ret/progs=1", "delta-instrs/op"},
		{"kprobe/1 on a kernel function", "BenchmarkTrampoline/target=helper/attach=kprobe/progs=1", "delta-instrs/op"},
	}},
}

var releaseNumbers = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`)

// releaseKey orders kernel releases by version (5.10 before 6.1 before
// 6.12), unparsable ones last.
func releaseKey(r string) [3]int {
	m := releaseNumbers.FindStringSubmatch(r)
	if m == nil {
		return [3]int{1 << 30}
	}
	var k [3]int
	for i := range k {
		k[i], _ = strconv.Atoi(m[i+1])
	}
	return k
}

// kernelFigure draws the instruction counts of the mechanisms across the
// kernels of the instruction-counting files among files, one x position
// per kernel (in version order; the first file of each kernel). It
// reports false when fewer than two kernels have such files.
func kernelFigure(files []*benchfile.File) (figure, bool, error) {
	byKernel := map[string]*benchfile.File{}
	var kernels []string
	for _, f := range files {
		k := f.Label("kernel")
		if !f.Icount() || !f.HasResults() || byKernel[k] != nil {
			continue
		}
		byKernel[k] = f
		kernels = append(kernels, k)
	}
	if len(kernels) < 2 {
		return figure{}, false, nil
	}
	sort.SliceStable(kernels, func(i, j int) bool {
		a, b := releaseKey(kernels[i]), releaseKey(kernels[j])
		for x := range a {
			if a[x] != b[x] {
				return a[x] < b[x]
			}
		}
		return false
	})
	ticks := make(plot.ConstantTicks, len(kernels))
	for i, k := range kernels {
		// The version alone (6.12.117 of 6.12.117+deb12-cloud-amd64):
		// whole releases run into each other under the axis.
		label := k
		if m := releaseNumbers.FindString(k); m != "" {
			label = m
		}
		ticks[i] = plot.Tick{Value: float64(i), Label: label}
	}
	fig := figure{what: "icount-kernels"}
	cs := colors{}
	for _, pn := range kernelPanels {
		var ss []series
		for _, m := range pn.mechs {
			s := series{label: m.label}
			for i, k := range kernels {
				if e, ok := estimate(byKernel[k], m.name, m.unit); ok {
					s.pts = append(s.pts, point{x: float64(i), e: e})
				}
			}
			if len(s.pts) > 0 {
				ss = append(ss, s)
			}
		}
		if len(ss) == 0 {
			continue
		}
		p, err := linePlot(pn.title+" [EMULATED GUEST, instruction counts: not times]",
			"kernel (Debian cloud, QEMU -icount)", "instructions", ticks, ss, nil, cs)
		if err != nil {
			return figure{}, false, err
		}
		fig.panels = append(fig.panels, p)
	}
	return fig, len(fig.panels) > 0, nil
}

// WriteKernels writes the kernel figure of files, if there is one, as
// icount-kernels.svg in dir (default: next to the first such file), and
// returns its path, or "" when there is none.
func WriteKernels(files []*benchfile.File, dir string) (string, error) {
	fig, ok, err := kernelFigure(files)
	if err != nil || !ok {
		return "", err
	}
	if dir == "" {
		return "", errNoDir
	}
	svg, err := fig.render()
	if err != nil {
		return "", fmt.Errorf("icount-kernels: %w", err)
	}
	path := filepath.Join(dir, "icount-kernels.svg")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, svg, 0o644)
}
