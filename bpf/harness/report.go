package harness

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/rig"
)

// Say prints a row's verdict (row "": b's own) once, for its last run, on stderr, as
// "Family/row: msg", with -test.v only: a results file keeps benchmark
// lines, not paragraphs between them. A verdict that says the row's
// figure is not what it seems (its first words in capitals, such as
// "NOT REMOTE-BOUND: ...") is also flagged in the run's record. No line
// starts "lowercase-word:", which benchfmt would read as a configuration
// line (go test merges stderr into stdout).
func Say(b *testing.B, rec *measure.Record, row, msg string) {
	if msg == "" {
		return
	}
	name := b.Name()
	if row != "" {
		name += "/" + row
	}
	if head, _, ok := strings.Cut(msg, ":"); ok && head == strings.ToUpper(head) && strings.ContainsAny(head, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		rec.Flag(name, head)
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "%s: %s\n", strings.TrimPrefix(name, "Benchmark"), msg)
	}
}

// OpenSNMP opens ns's /proc/net/snmp from inside it; Close closes it.
func OpenSNMP(ns *host.Netns) (*SNMP, error) {
	var f *os.File
	err := ns.Do(func() error {
		var err error
		f, err = os.Open("/proc/thread-self/net/snmp")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open /proc/net/snmp of %s: %w", ns.Name, err)
	}
	return &SNMP{f: f}, nil
}

// SNMP is a network namespace's /proc/net/snmp, opened from inside it:
// the open file keeps reading that namespace's counters from any thread.
// (/proc/net is /proc/self/net, the main thread's namespace, so a thread in
// the namespace opens /proc/thread-self/net/snmp.)
type SNMP struct{ f *os.File }

// Close closes the file.
func (s *SNMP) Close() error { return s.f.Close() }

// Read returns counter name of protocol proto ("Udp", "NoPorts").
func (s *SNMP) Read(proto, name string) (uint64, error) {
	buf := make([]byte, 16<<10)
	n, err := s.f.ReadAt(buf, 0)
	if n == 0 && err != nil {
		return 0, fmt.Errorf("read /proc/net/snmp: %w", err)
	}
	var header []string
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != proto+":" {
			continue
		}
		if header == nil {
			header = fields
			continue
		}
		for i, h := range header {
			if h == name && i < len(fields) {
				var v uint64
				if _, err := fmt.Sscan(fields[i], &v); err != nil {
					return 0, fmt.Errorf("/proc/net/snmp %s %s: %q: %w", proto, name, fields[i], err)
				}
				return v, nil
			}
		}
		break
	}
	return 0, fmt.Errorf("/proc/net/snmp has no %s %s", proto, name)
}

// Indent puts prefix before every line of s.
func Indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix)
}

// TrafficWords says whether the result measures what it names.
func TrafficWords(r rig.Receiver, res rig.TrafficResult) string {
	total := res.Total
	counts := fmt.Sprintf("generated %d, received %d, returned %d, lost %d (%.2f%%)",
		total.Gen, total.Received(), total.Returned(), res.Lost, 100*res.LostFrac)
	switch {
	case r.GeneratorOnly():
		return fmt.Sprintf("generator alone: %.1f ns per frame made and dropped (%s). One CPU does both halves here "+
			"(veth receives on the sending CPU), so every receiver's ns/pkt includes this; rx-ns/pkt subtracts it pairwise.",
			res.Ns, counts)
	case res.LostFrac >= rig.MaxLostFrac:
		return "DOMINATED BY LOSSES: frames that never arrived cost the receiver nothing; " + counts
	case !res.HaveGen:
		return "plain mode: generating and receiving together, no bottleneck check; " + counts
	case !res.RxBound:
		return fmt.Sprintf("DOMINATED BY THE GENERATOR: it costs %.1f of %.1f ns per packet; read rx-ns/pkt (%.1f%s), not pps; %s",
			res.GenNs, res.Ns, res.RxNs, PlusMinus(res.RxCI95), counts)
	}
	return fmt.Sprintf("receiver-bound: receiving is %.1f%s of %.1f ns per packet (generating %.1f, on the same CPU); %s",
		res.RxNs, PlusMinus(res.RxCI95), res.Ns, res.GenNs, counts)
}

// PlusMinus formats a 95% confidence half-width, which one round does not have.
func PlusMinus(ci float64) string {
	if math.IsInf(ci, 0) || math.IsNaN(ci) {
		return ""
	}
	return fmt.Sprintf(" ± %.2f", ci)
}
