package mechanism

import (
	"bytes"
	"strings"
	"testing"

	"bpfbench/results/benchfile"
)

func file(t *testing.T, name, text string) *benchfile.File {
	t.Helper()
	f, err := benchfile.Parse(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const tc = "BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc"
const k0 = "BenchmarkDispatcher/dispatcher=k0/fill=none/prog=xdp"

func TestRetpolineOn(t *testing.T) {
	f := file(t, "a.anatomy", "anatomy: qemu-tcg-plugin\nkernel: 7.3.4\nretpoline: on\ncfi: off\n"+
		tc+" 1 93.1 instrs/op 1 delta-retpolines/op 0 delta-icalls/op\n"+
		k0+" 1 95.1 instrs/op 0 retpolines/op\n")
	got := map[string]string{}
	for _, o := range Judge([]*benchfile.File{f}) {
		got[o.Rule.IDs+" "+o.Rule.Row+" "+o.Rule.Unit] = o.Verdict
	}
	for k, want := range map[string]string{
		"1.1, 1.5 " + tc + " delta-retpolines/op": "in mechanism",
		"1.1, 1.5 " + k0 + " retpolines/op":       "in mechanism",
		"1.4, 1.5 " + tc + " delta-icalls/op":     "needs an anatomy of a mitigations=off boot",
		"2.1 " + tc + " delta-kcfi-checks/op":     "needs anatomies of the kCFI pair",
	} {
		if !strings.HasPrefix(got[k], want) {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
}

func TestRetpolineMissing(t *testing.T) {
	// A boot said to have retpolines whose indirect call enters none.
	f := file(t, "a.anatomy", "anatomy: qemu-tcg-plugin\nretpoline: on\n"+tc+" 1 93.1 instrs/op 0 delta-retpolines/op\n")
	for _, o := range Judge([]*benchfile.File{f}) {
		if o.Rule.Row == tc && o.Rule.Unit == "delta-retpolines/op" && o.Rule.Value == "on" && o.Verdict != "not in mechanism" {
			t.Errorf("verdict %q, want not in mechanism", o.Verdict)
		}
	}
}

func TestPairs(t *testing.T) {
	kcfi := file(t, "k.anatomy", "anatomy: qemu-tcg-plugin\nkernel: 6.12.118-bpfbench-kcfi\ncfi: kcfi\nretpoline: on\n"+
		tc+" 1 96 instrs/op 1 delta-kcfi-checks/op\n"+k0+" 1 100 instrs/op 0 kcfi-checks/op\n")
	nocfi := file(t, "n.anatomy", "anatomy: qemu-tcg-plugin\nkernel: 6.12.118-bpfbench-nocfi\ncfi: off\nretpoline: on\n"+
		tc+" 1 93 instrs/op 0 delta-kcfi-checks/op\n"+k0+" 1 100 instrs/op 0 kcfi-checks/op\n")
	old := file(t, "o.anatomy", "anatomy: qemu-tcg-plugin\nkernel: 6.12.118+deb13-cloud-amd64\ncfi: off\nretpoline: on\n"+
		"BenchmarkTrampoline/target=helper/attach=fexit/progs=1 1 200 instrs/op 1 delta-calls-rets/op\n")
	newer := file(t, "n.anatomy", "anatomy: qemu-tcg-plugin\nkernel: 7.3.4+deb13-cloud-amd64\ncfi: off\nretpoline: on\n"+
		"BenchmarkTrampoline/target=helper/attach=fexit/progs=1 1 180 instrs/op 1 delta-calls-rets/op\n")
	// The kCFI kernel booted with cfi=fineibt: its check is FineIBT's.
	fineibt := file(t, "f.anatomy", "anatomy: qemu-tcg-plugin\nkernel: 6.12.118-bpfbench-kcfi\ncfi: fineibt\nretpoline: on\n"+
		tc+" 1 98 instrs/op 0 delta-kcfi-checks/op 1 delta-fineibt-checks/op\n")
	for _, o := range Judge([]*benchfile.File{fineibt, nocfi}) {
		if o.Rule.IDs == "2.1" && o.Verdict != "in mechanism" {
			t.Errorf("2.1 on a FineIBT boot: %s (%s)", o.Verdict, o.Counted)
		}
	}
	// Debian's gcc-built 6.12 of the same release is no CFI pair.
	debian := file(t, "d.anatomy", "anatomy: qemu-tcg-plugin\nkernel: 6.12.118+deb13-cloud-amd64\ncfi: off\nretpoline: on\n"+
		tc+" 1 93 instrs/op 0 delta-kcfi-checks/op\n")
	for _, o := range Judge([]*benchfile.File{kcfi, debian}) {
		if o.Rule.Pair == CFI && len(o.Files) > 0 {
			t.Errorf("%s paired the kCFI kernel with Debian's build", o.Rule.IDs)
		}
	}
	var out bytes.Buffer
	Report(&out, []*benchfile.File{kcfi, nocfi, old, newer})
	got := map[string]string{}
	for _, o := range Judge([]*benchfile.File{kcfi, nocfi, old, newer}) {
		got[o.Rule.IDs] = o.Verdict + " " + o.Counted
	}
	for id, want := range map[string]string{
		"2.1": "in mechanism +1.00 - 0.00 = +1.00",
		"2.2": "in mechanism 0.00 - 0.00 = 0.00",
		// 7.3 still unbalanced: jmp mode absent.
		"6.1": "not in mechanism +1.00 then +1.00",
	} {
		if got[id] != want {
			t.Errorf("%s: %q, want %q\n%s", id, got[id], want, out.String())
		}
	}
}

func TestBootRules(t *testing.T) {
	srso := file(t, "m.anatomy", "anatomy: qemu-tcg-plugin\nspec-rstack-overflow: Vulnerable: Safe RET, no microcode\nits: Not affected\n"+
		k0+" 1 105 instrs/op 0 bare-rets/op 3 calls-rets/op 3 retthunks/op\n")
	stuff := file(t, "s.anatomy", "anatomy: qemu-tcg-plugin\ncall-depth-tracking: on\n"+
		k0+" 1 108 instrs/op 6 depth-updates/op 3 calls/op 4 rets/op\n")
	got := map[string][]string{}
	for _, o := range Judge([]*benchfile.File{srso, stuff}) {
		if len(o.Files) > 0 {
			got[o.Rule.IDs] = append(got[o.Rule.IDs], o.Rule.Unit+" "+o.Verdict)
		}
	}
	want := map[string][]string{
		"SRSO":       {"bare-rets/op in mechanism", "calls-rets/op in mechanism"},
		"call depth": {"depth-updates/op not in mechanism"}, // 6 updates for 3 calls and 4 returns
	}
	for id, w := range want {
		if strings.Join(got[id], "; ") != strings.Join(w, "; ") {
			t.Errorf("%s: %q, want %q", id, got[id], w)
		}
	}
	if len(got["8.1"]) != 0 {
		t.Errorf("8.1 judged on files of no ITS boot: %q", got["8.1"])
	}
}
