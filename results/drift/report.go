package drift

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"text/tabwriter"

	"bpfbench/bpf/units"
	"bpfbench/results/benchfile"
)

// Units are the units a shift is reported in, where the files have
// them: cycles/op first, the one to compare across runs on a VM; ns/op,
// which moves with the host's clock rate too, with -all.
var Units = []string{"cycles/op", "instrs/op"}

// AllUnits are Units and ns/op.
var AllUnits = []string{"cycles/op", "ns/op", "instrs/op"}

// Report prints, for each unit both files have, how far their rows
// moved together and which rows moved beyond that; with an A/A pair of
// the machine (aa, nil without), which of those moved beyond its noise.
func Report(w io.Writer, a, b *benchfile.File, aa [2]*benchfile.File, shown []string) {
	fmt.Fprintf(w, "The shift all rows share from A to B, the rows beyond it (benchstat's test, p < %.2g, on B over the shift), and the machine's noise\n", driftAlpha)
	for _, f := range []*benchfile.File{a, b} {
		if n, all := f.ContendedRuns(); n > 0 {
			fmt.Fprintf(w, "%s: %d of %d row-runs had %s: left out\n", filepath.Base(f.Path), n, all, units.TooFewFree())
		}
		if len(f.Discordant()) > 0 {
			fmt.Fprintf(w, "%s: %s\n", filepath.Base(f.Path), f.PassSummary())
		}
		if s := f.SlowBaseSummary(); s != "" {
			fmt.Fprintf(w, "%s: %s\n", filepath.Base(f.Path), s)
		}
		if f.OldRule() {
			fmt.Fprintf(w, "%s: contended-frac by the rule before the judge (no %s line): a reference moved, whatever the program did\n", filepath.Base(f.Path), units.ContentionLabel)
		}
	}
	if aa[0] != nil {
		fmt.Fprintf(w, "noise floor: the A/A pair %s, %s\n", filepath.Base(aa[0].Path), filepath.Base(aa[1].Path))
		if why := Foreign(a, aa); why != "" {
			fmt.Fprintf(w, "  %s\n", why)
		}
	} else {
		fmt.Fprintf(w, "no A/A pair of this machine (cpu-vendor, cpu-family-model, virt) in results/aa/: no noise floor; make one with make aa\n")
	}
	for _, u := range shown {
		var floor *Floor
		if aa[0] != nil {
			floor, _ = NewFloor(aa[0], aa[1], u)
		}
		s, ok := Compare(a, b, u, floor)
		if !ok {
			continue
		}
		fmt.Fprintf(w, "%s: %d rows; shared shift %+.2f%% [%+.2f%%, %+.2f%%], %d of %d rows moved that way\n",
			u, s.Rows, 100*s.Median, 100*s.Lo, 100*s.Hi, s.Same, s.Rows)
		fmt.Fprintf(w, "  different as they stand: %d of %d rows; beyond the shared shift: %d; furthest from it: %s %+.2f%%\n",
			s.Different, s.Rows, len(s.Beyond), s.Largest.Name, 100*s.Largest.Move)
		if floor != nil {
			fmt.Fprintf(w, "  the A/A pair's own shared shift %+.2f%%: a shared shift within %.2f%% is the machine's\n",
				100*floor.Shift, 100*floor.Shared())
			fmt.Fprintf(w, "  beyond the machine's noise (A/A floor %.2f%%, more for rows noisier there): %d of %d rows\n",
				100*floor.Machine, len(s.Noise), s.Rows)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, r := range s.Beyond {
			verdict := ""
			if floor != nil {
				verdict = "within the noise"
				if math.Abs(r.Move) > floor.Of(r.Name) {
					verdict = "BEYOND THE NOISE"
				}
				verdict = fmt.Sprintf("\tfloor %.2f%%: %s", 100*floor.Of(r.Name), verdict)
			}
			fmt.Fprintf(tw, "    %s\t%+.2f%% beyond the shift\tp=%.3f%s\n", r.Name, 100*r.Move, r.P, verdict)
		}
		tw.Flush()
	}
}
