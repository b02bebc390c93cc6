package anatomy

import (
	"fmt"
	"math"
	"strings"

	"bpfbench/bpf/units"
	"bpfbench/results/benchfile"
)

// Agreement is how far a row's instructions per op may lie from the
// instrs/op its results file reports, as a fraction.
const Agreement = 0.01

// Checks says what in an anatomy fails the instrument's proofs: the
// instructions per op of each row the kernel's loop times against the
// row's instrs/op in its results file (res), the events of those rows
// being whole numbers (Row.Check), the A/A controls giving their
// baseline's anatomy, and the calibration giving 64 more plain
// instructions and nothing else. Notes are what is worth saying and
// fails nothing: a bpf_loop-timed row whose instrs/op is not its count
// (the suite's clock is not exact there, docs/icount.md#results).
func Checks(rows []Row, res *benchfile.File) (bad, notes []string) {
	for _, r := range rows {
		bad = append(bad, r.Check()...)
		if runs := res.Runs[r.Name]; len(runs) > 0 {
			if want, ok := runs[0].Values["instrs/op"]; ok && want > 0 {
				if d := math.Abs(r.V[Instrs]-want) / want; d > Agreement {
					msg := fmt.Sprintf("%s: %.2f instructions per op, the row's instrs/op is %.2f (%.1f%% apart, more than %.0f%%)",
						r.Name, r.V[Instrs], want, 100*d, 100*Agreement)
					if r.Timing == "kernel" {
						bad = append(bad, msg)
					} else {
						notes = append(notes, msg+"; timed by a bpf_loop")
					}
				}
			}
		}
		switch {
		case units.IsControl(r.Name):
			bad = append(bad, expect(r, 0)...)
		case control(r.Name, "BenchmarkXDP/prog=add64/"):
			bad = append(bad, expect(r, 64)...)
		}
	}
	return bad, notes
}

func control(name, prefix string) bool { return strings.HasPrefix(name+"/", prefix) }

// expect checks a control row: instrs more instructions than its
// baseline (within half an instruction) and no other event (within
// wholeTolerance).
func expect(r Row, instrs float64) []string {
	if !r.HaveBase {
		return []string{fmt.Sprintf("%s: a control without its baseline", r.Name)}
	}
	var bad []string
	if d := r.Delta[Instrs]; math.Abs(d-instrs) > 0.5 {
		bad = append(bad, fmt.Sprintf("%s: %+.2f instructions over its baseline, want %+.0f", r.Name, d, instrs))
	}
	for k := Calls; k < nKinds; k++ {
		if d := r.Delta[k]; math.Abs(d) > wholeTolerance {
			bad = append(bad, fmt.Sprintf("%s: %+.3f %s over its baseline, want 0", r.Name, d, k.Unit()))
		}
	}
	return bad
}
