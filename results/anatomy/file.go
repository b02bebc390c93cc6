package anatomy

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// configLine is a benchfmt configuration line.
var configLine = regexp.MustCompile(`^[a-z][a-z0-9_.-]*: `)

// ConfigLines are the configuration lines of a results file, before its
// first result: an anatomy file carries its run's labels.
func ConfigLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		l := s.Text()
		if strings.HasPrefix(l, "Benchmark") && strings.ContainsAny(l, " \t") {
			break
		}
		if configLine.MatchString(l) {
			lines = append(lines, l)
		}
	}
	return lines, s.Err()
}

// UnitCallsMinusRets is the unit of calls minus returns per repetition.
const UnitCallsMinusRets = "calls-rets/op"

// Write writes rows as a benchfmt file: the configuration lines, a Unit
// line per unit (exact counts), and per row one result line, the
// variant's counts and their deltas against the baseline, followed by
// its top functions, indented (benchfmt passes over them).
func Write(w io.Writer, config []string, rows []Row) error {
	bw := bufio.NewWriter(w)
	for _, l := range config {
		fmt.Fprintln(bw, l)
	}
	fmt.Fprintln(bw, "anatomy: qemu-tcg-plugin")
	for k := Kind(0); k < nKinds; k++ {
		fmt.Fprintf(bw, "Unit %s assume=exact\nUnit delta-%s assume=exact\n", k.Unit(), k.Unit())
	}
	fmt.Fprintf(bw, "Unit %s assume=exact\nUnit delta-%s assume=exact\n", UnitCallsMinusRets, UnitCallsMinusRets)
	for _, r := range rows {
		fmt.Fprintf(bw, "%s 1", r.Name)
		for k := Kind(0); k < nKinds; k++ {
			fmt.Fprintf(bw, " %.3f %s", r.V[k], k.Unit())
		}
		fmt.Fprintf(bw, " %.3f %s", r.CallsMinusRets, UnitCallsMinusRets)
		if r.HaveBase {
			for k := Kind(0); k < nKinds; k++ {
				fmt.Fprintf(bw, " %.3f delta-%s", r.Delta[k], k.Unit())
			}
			fmt.Fprintf(bw, " %.3f delta-%s", r.DeltaCallsMinusRets, UnitCallsMinusRets)
		}
		fmt.Fprintln(bw)
		for _, f := range r.Top {
			fmt.Fprintf(bw, "    %10.2f  %s\n", f.Instrs, f.Name)
		}
	}
	return bw.Flush()
}
