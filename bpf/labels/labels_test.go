package labels

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"
)

var updateLabels = flag.Bool("update-labels", false, "rewrite testdata/labels/*/want.txt")

// fixtureSource replays a machine captured under testdata/labels/<machine>:
// files at their absolute paths below dir, plus "env" (KEY=VALUE lines) and
// "cpuid-hypervisor" (the CPUID 0x40000000 signature) when the machine had
// them.
func fixtureSource(dir string) source {
	read := func(path string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
		var pe *fs.PathError
		if errors.As(err, &pe) {
			// Report the machine's path, not the fixture's.
			return nil, &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
		}
		return b, err
	}
	env, _ := os.ReadFile(filepath.Join(dir, "env"))
	sig, _ := os.ReadFile(filepath.Join(dir, "cpuid-hypervisor"))
	return source{
		readFile: func(path string) ([]byte, error) {
			if !strings.HasPrefix(path, "/") {
				return nil, fmt.Errorf("fixture path %q is not absolute", path)
			}
			return read(path)
		},
		getenv: func(key string) string {
			for line := range strings.Lines(string(env)) {
				if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && k == key {
					return v
				}
			}
			return ""
		},
		hvSignature: func() string { return strings.TrimSuffix(string(sig), "\n") },
		commit:      func() string { return "fixture" },
		start:       time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func TestLabelsFixtures(t *testing.T) {
	entries, err := os.ReadDir("testdata/labels")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		dir := filepath.Join("testdata/labels", e.Name())
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var got bytes.Buffer
			if err := Write(&got, labelsFrom(fixtureSource(dir))); err != nil {
				t.Fatal(err)
			}
			wantPath := filepath.Join(dir, "want.txt")
			if *updateLabels {
				if err := os.WriteFile(wantPath, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(wantPath)
			if err != nil {
				t.Fatal(err)
			}
			gotLines, wantLines := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
			for i := range max(len(gotLines), len(wantLines)) {
				g, w := at(gotLines, i), at(wantLines, i)
				if g != w {
					t.Errorf("line %d:\n got: %s\nwant: %s", i+1, g, w)
				}
			}
		})
	}
	if n < 10 {
		t.Fatalf("found %d fixture machines, want at least 10", n)
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<missing>"
}

var labelKeys = []string{
	"cpu-vendor", "cpu-family-model", "kernel", "kernel-version", "virt", "icount-shift", "qemu-cpu",
	"mitigations", "cmdline-mitigations", "spectre-v2", "retbleed",
	"spec-rstack-overflow", "spectre-v1", "meltdown", "its", "retpoline", "ibt",
	"cfi", "call-depth-tracking", "bpf-jit-enable", "bpf-jit-harden",
	"bpf-jit-kallsyms", "bpf-stats-enabled", "rcu-expedited", "preempt", "hz", "irq-time-accounting", "paravirt-time-accounting", "smt", "cpu-governor", "commit", "runstamp",
}

// TestLabelsLive reads this machine and checks that benchstat's reader gets
// every label back, once, in order.
func TestLabelsLive(t *testing.T) {
	ls := All()
	var keys []string
	for _, l := range ls {
		keys = append(keys, l.Key)
		t.Logf("%s: %s", l.Key, l.Value)
	}
	if !slices.Equal(keys, labelKeys) {
		t.Fatalf("keys\n got %q\nwant %q", keys, labelKeys)
	}
	var buf bytes.Buffer
	if err := Write(&buf, ls); err != nil {
		t.Fatal(err)
	}
	// go test's own lines come first, as in a real results file.
	text := "goos: linux\ngoarch: amd64\npkg: bpfbench/bpf\ncpu: test\n" + buf.String() + "BenchmarkX 1 1 ns/op\n"
	r := benchfmt.NewReader(strings.NewReader(text), "labels.txt")
	var res *benchfmt.Result
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			res = rec
		case *benchfmt.SyntaxError:
			t.Fatal(rec)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if res == nil {
		t.Fatal("benchfmt read no result")
	}
	var got []Label
	for _, c := range res.Config {
		if c.File && !slices.Contains([]string{"goos", "goarch", "pkg", "cpu"}, c.Key) {
			got = append(got, Label{c.Key, string(c.Value)})
		}
	}
	if !slices.Equal(got, ls) {
		t.Errorf("benchfmt read back\n%q\nwant\n%q", got, ls)
	}
	if again := All(); again[len(again)-1] != ls[len(ls)-1] {
		t.Errorf("runstamp changed within the process: %v then %v", ls[len(ls)-1], again[len(again)-1])
	}
}

func TestWriteLabelsRejects(t *testing.T) {
	for _, l := range []Label{
		{"Kernel", "x"}, {"ke rnel", "x"}, {"a:b", "x"}, {"", "x"},
		{"kernel", ""}, {"kernel", "  "}, {"kernel", "a\nb"},
	} {
		if err := Write(new(bytes.Buffer), []Label{l}); err == nil {
			t.Errorf("Write(%q) succeeded, want an error", l)
		}
	}
}

// TestParseSpectreV2 uses /sys/devices/system/cpu/vulnerabilities/spectre_v2
// contents seen on real machines, kernels 4.9 to 6.18 (sources in
// testdata/labels/README.md).
func TestParseSpectreV2(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// Debian stretch 4.9, Intel.
		{"Mitigation: Full generic retpoline", "on"},
		// RHEL 7 (insights-core test data), Intel.
		{"Mitigation: Full generic retpoline, IBPB: conditional, IBRS_FW, STIBP: conditional, RSB filling", "on"},
		// 5.x, AMD: the "AMD retpoline" of 4.15-5.16 is lfence; jmp.
		{"Mitigation: Full AMD retpoline, IBPB: conditional, IBRS_FW, STIBP: conditional, RSB filling", "lfence"},
		// RHEL 6/7 backports.
		{"Mitigation: IBRS (kernel)", "off"},
		{"Vulnerable: Retpoline without IBPB", "on"},
		// 5.17-5.18 rename, Intel pre-eIBRS.
		{"Mitigation: Retpolines, IBPB: conditional, IBRS_FW, STIBP: conditional, RSB filling", "on"},
		// 5.8, Cascade Lake (TUM sakura).
		{"Mitigation: Enhanced IBRS, IBPB: conditional, RSB filling", "off"},
		// 6.0, Sapphire Rapids (TUM xavier).
		{"Mitigation: Enhanced IBRS, IBPB: conditional, RSB filling, PBRSB-eIBRS: SW sequence", "off"},
		// 6.1, Skylake with retbleed=ibrs (Debian bookworm).
		{"Mitigation: IBRS, IBPB: conditional, RSB filling, PBRSB-eIBRS: Not affected", "off"},
		// 6.3, Cascade Lake.
		{"Mitigation: Enhanced / Automatic IBRS, IBPB: conditional, RSB filling, PBRSB-eIBRS: SW sequence", "off"},
		// 6.8, AMD EPYC 7713P (TUM ryan).
		{"Mitigation: Retpolines, IBPB: conditional, IBRS_FW, STIBP: disabled, RSB filling, PBRSB-eIBRS: Not affected", "on"},
		// 6.9+: ";" separates, because BHI's own text has a ",".
		{"Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; RSB filling; PBRSB-eIBRS: SW sequence; BHI: SW loop, KVM: SW loop", "off"},
		{"Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; PBRSB-eIBRS: Not affected; BHI: BHI_DIS_S", "off"},
		{"Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected", "off"},
		{"Mitigation: Retpolines; IBPB: conditional; IBRS_FW; STIBP: always-on; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected", "on"},
		// This machine (6.18, AMD family 26 under PVM/KVM).
		{"Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected", "on"},
		// mitigations=off, before and after 6.9.
		{"Vulnerable, IBPB: disabled, STIBP: disabled, PBRSB-eIBRS: Not affected", "off"},
		{"Vulnerable; IBPB: disabled; STIBP: disabled; PBRSB-eIBRS: Not affected; BHI: Not affected", "off"},
		// Strings from bugs.c: spectre_v2_strings[] and spectre_v2_show_state().
		{"Vulnerable: Minimal generic ASM retpoline", "minimal"},
		{"Mitigation: LFENCE", "lfence"},
		{"Vulnerable: LFENCE", "lfence"},
		{"Mitigation: Enhanced / Automatic IBRS + LFENCE", "lfence"},
		{"Mitigation: Enhanced / Automatic IBRS + Retpolines", "on"},
		{"Vulnerable: eIBRS with unprivileged eBPF", "off"},
		{"Vulnerable: eIBRS+LFENCE with unprivileged eBPF and SMT", "lfence"},
		{"Not affected", "off"},
		// arm64 (TUM joy, 5.10).
		{"Mitigation: CSV2, BHB", "off"},
		{"Something new", "unknown (unrecognised spectre_v2: Something new)"},
	} {
		if got := parseSpectreV2(c.in); got != c.want {
			t.Errorf("parseSpectreV2(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseCmdline(t *testing.T) {
	c := parseCmdline(`BOOT_IMAGE=/vmlinuz root=UUID=x dyndbg="file foo.c +p" mitigations=auto,nosmt spectre_v2=retpoline nopti mitigations=off cfi=kcfi -- init -- spectre_v2=off`)
	want := cmdline{"BOOT_IMAGE=/vmlinuz", "root=UUID=x", `dyndbg="file foo.c +p"`, "mitigations=auto,nosmt", "spectre_v2=retpoline", "nopti", "mitigations=off", "cfi=kcfi"}
	if !slices.Equal(c, want) {
		t.Fatalf("parseCmdline = %q, want %q", c, want)
	}
	if got := c.last("mitigations", "default"); got != "off" {
		t.Errorf(`last("mitigations") = %q, want "off"`, got)
	}
	if got := c.mitigationOptions(); got != "spectre_v2=retpoline nopti cfi=kcfi" {
		t.Errorf("mitigationOptions = %q", got)
	}
	if got := parseCmdline("console=ttyS0").mitigationOptions(); got != "none" {
		t.Errorf("mitigationOptions without any = %q, want none", got)
	}
}

func cfgOf(lines ...string) kconfig {
	return kconfig{vals: parseConfig([]byte(strings.Join(lines, "\n")))}
}

func TestDetectCFI(t *testing.T) {
	ibt := parseCPUInfo("flags\t\t: fpu ibt hypervisor\n")
	noIBT := parseCPUInfo("flags\t\t: fpu hypervisor\n")
	noFlags := parseCPUInfo("CPU implementer\t: 0x41\n")
	fine := cfgOf("CONFIG_CFI_CLANG=y", "CONFIG_X86_KERNEL_IBT=y", "CONFIG_FINEIBT=y")
	fineKCFIDefault := cfgOf("CONFIG_CFI=y", "CONFIG_FINEIBT=y", "# CONFIG_CFI_AUTO_DEFAULT is not set")
	noCfg := kconfig{why: "no config"}
	for _, c := range []struct {
		name string
		cfg  kconfig
		cmd  string
		syms kallsyms
		cpu  cpuInfo
		want string
	}{
		{"not built", cfgOf("# CONFIG_CFI_CLANG is not set"), "", kallsyms{}, ibt, "off"},
		{"6.18 name", cfgOf("CONFIG_CFI=y"), "", kallsyms{}, ibt, "kcfi"},
		{"kcfi only ignores cfi=", cfgOf("CONFIG_CFI_CLANG=y"), "cfi=off", kallsyms{}, ibt, "kcfi"},
		{"auto with ibt", fine, "", kallsyms{}, ibt, "fineibt"},
		{"auto without ibt", fine, "", kallsyms{}, noIBT, "kcfi"},
		{"auto, flags unknown", fine, "", kallsyms{}, noFlags, "unknown (kcfi built in; fineibt chosen at boot if cpu has ibt)"},
		{"cfi=kcfi", fine, "cfi=kcfi", kallsyms{}, ibt, "kcfi"},
		{"cfi=off", fine, "cfi=norand,off", kallsyms{}, ibt, "off"},
		{"cfi=fineibt without ibt", fine, "cfi=fineibt", kallsyms{}, noIBT, "fineibt"},
		{"CFI_AUTO_DEFAULT=n", fineKCFIDefault, "", kallsyms{}, ibt, "kcfi"},
		{"CFI_AUTO_DEFAULT=n, cfi=auto", fineKCFIDefault, "cfi=auto", kallsyms{}, ibt, "fineibt"},
		{"symbols: none", noCfg, "", kallsyms{}, ibt, "off (no __cfi_ symbols)"},
		{"symbols: kcfi", noCfg, "", kallsyms{cfi: true}, ibt, "kcfi"},
		{"symbols: fineibt, no ibt", noCfg, "", kallsyms{cfi: true, fineIBT: true}, noIBT, "kcfi"},
		{"symbols: fineibt, ibt", noCfg, "", kallsyms{cfi: true, fineIBT: true}, ibt, "unknown (kcfi built in; fineibt chosen at boot if CFI_AUTO_DEFAULT)"},
		{"symbols hidden", noCfg, "", kallsyms{why: "kallsyms addresses hidden"}, ibt, "unknown (no config; kallsyms addresses hidden)"},
	} {
		if got := detectCFI(c.cfg, parseCmdline(c.cmd), c.syms, c.cpu); got != c.want {
			t.Errorf("%s: detectCFI = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestDetectIBT covers the IBT states the fixtures do not: ibt=off on the
// command line, and a CPU with IBT under a kernel built without it.
func TestDetectIBT(t *testing.T) {
	ibt := parseCPUInfo("flags\t\t: fpu ibt hypervisor\n")
	noIBT := parseCPUInfo("flags\t\t: fpu hypervisor\n")
	noFlags := parseCPUInfo("CPU implementer\t: 0x41\n")
	built := cfgOf("CONFIG_X86_KERNEL_IBT=y")
	for _, c := range []struct {
		name string
		cfg  kconfig
		cmd  string
		cpu  cpuInfo
		want string
	}{
		{"on", built, "", ibt, "on"},
		{"ibt=off", built, "ibt=off", ibt, "off (ibt=off)"},
		{"not built", cfgOf("# CONFIG_X86_KERNEL_IBT is not set"), "", ibt, "off (kernel built without X86_KERNEL_IBT)"},
		{"cpu lacks it", built, "", noIBT, "off (cpu lacks ibt)"},
		{"no flags", built, "", noFlags, "unknown (no flags in /proc/cpuinfo)"},
		{"no config", kconfig{why: "no config"}, "", ibt, "unknown (cpu has ibt; no config)"},
	} {
		if got := detectIBT(c.cfg, parseCmdline(c.cmd), c.cpu); got != c.want {
			t.Errorf("%s: detectIBT = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestKallsyms(t *testing.T) {
	src := func(s string) source {
		return source{readFile: func(string) ([]byte, error) { return []byte(s), nil }}
	}
	hidden := "0000000000000000 T _text\n0000000000000000 t __cfi_foo\n"
	if got := src(hidden).kallsyms(); got.why == "" {
		t.Errorf("zeroed kallsyms trusted: %+v", got)
	}
	shown := "ffffffff81000000 T _text\nffffffff81001000 t __cfi_foo\nffffffff81002000 T fineibt_preamble_start\n"
	if got := src(shown).kallsyms(); got != (kallsyms{cfi: true, fineIBT: true}) {
		t.Errorf("kallsyms = %+v", got)
	}
}

func TestDetectVirt(t *testing.T) {
	tcgCPU := parseCPUInfo("vendor_id\t: AuthenticAMD\nmodel name\t: QEMU TCG CPU version 2.5+\nflags\t\t: fpu hypervisor\n")
	guest := parseCPUInfo("flags\t\t: fpu hypervisor\n")
	metal := parseCPUInfo("flags\t\t: fpu vmx\n")
	for _, c := range []struct {
		name, override, sig, xen string
		cpu                      cpuInfo
		clock, dmi, want         string
	}{
		{"override", "tcg", "KVMKVMKVM\x00\x00\x00", "", guest, "kvm-clock", "", "tcg"},
		{"cpuid kvm", "", "KVMKVMKVM\x00\x00\x00", "", guest, "", "", "kvm"},
		// QEMU 6.0-rc showed the TCG model name under KVM (a bug); the
		// signature wins.
		{"cpuid beats model name", "", "KVMKVMKVM\x00\x00\x00", "", tcgCPU, "", "QEMU", "kvm"},
		{"cpuid tcg", "", "TCGTCGTCGTCG", "", guest, "", "QEMU", "tcg"},
		{"cpuid other", "", "bhyve bhyve ", "", guest, "", "", "unknown (cpuid hypervisor bhyve bhyve)"},
		{"xen sysfs", "", "", "xen", guest, "xen tsc", "Xen", "xen"},
		{"bare metal", "", "", "", metal, "tsc hpet acpi_pm", "Dell Inc.", "none"},
		{"kvm-clock", "", "", "", guest, "kvm-clock tsc ", "", "kvm"},
		{"hyperv clock", "", "", "", guest, "hyperv_clocksource_tsc_page acpi_pm", "Microsoft Corporation", "hyperv"},
		{"tcg model name", "", "", "", tcgCPU, "tsc-early hpet acpi_pm", "QEMU", "tcg"},
		{"qemu dmi, no kvm-clock", "", "", "", guest, "tsc-early hpet acpi_pm", "QEMU", "unknown (qemu without kvm-clock: tcg, or kvm with kvmclock hidden)"},
		{"vmware dmi", "", "", "", guest, "tsc", "VMware, Inc.", "vmware"},
		{"nothing", "", "", "", guest, "", "", "unknown (hypervisor flag set; vendor not identified)"},
	} {
		if got := detectVirt(c.override, c.sig, c.xen, c.cpu, c.clock, c.dmi); got != c.want {
			t.Errorf("%s: detectVirt = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestParsePreempt(t *testing.T) {
	dyn := cfgOf("CONFIG_PREEMPT_DYNAMIC=y", "CONFIG_PREEMPT_VOLUNTARY=y", "# CONFIG_PREEMPT is not set")
	for _, c := range []struct {
		name, debugfs, uname string
		cfg                  kconfig
		cmd, want            string
	}{
		{"debugfs", "none voluntary (full) lazy\n", "#1 SMP PREEMPT_DYNAMIC", dyn, "", "full"},
		{"dynamic, config default", "", "#1 SMP PREEMPT_DYNAMIC", dyn, "", "dynamic (boot mode voluntary; no debugfs)"},
		{"dynamic, preempt=", "", "#1 SMP PREEMPT_DYNAMIC", dyn, "preempt=lazy", "dynamic (boot mode lazy; no debugfs)"},
		{"dynamic, no config", "", "#1 SMP PREEMPT_DYNAMIC @0", kconfig{}, "", "dynamic (mode unknown: no debugfs)"},
		{"rt", "", "#1 SMP PREEMPT_RT Fri", kconfig{}, "", "rt"},
		// 5.12-5.17 printed PREEMPT for dynamic kernels: the config tells.
		{"old dynamic", "", "#1 SMP PREEMPT Mon", dyn, "", "dynamic (boot mode voluntary; no debugfs)"},
		{"static full", "", "#1 SMP PREEMPT Mon", kconfig{}, "", "full"},
		{"voluntary", "", "#1 SMP Mon", cfgOf("CONFIG_PREEMPT_VOLUNTARY=y"), "", "voluntary"},
		{"unknown", "", "#1 SMP Mon", kconfig{}, "", "unknown (no PREEMPT in uname -v: none or voluntary)"},
	} {
		if got := parsePreempt(c.debugfs, c.uname, c.cfg, parseCmdline(c.cmd)); got != c.want {
			t.Errorf("%s: parsePreempt = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDetectCallDepth(t *testing.T) {
	cdt := cfgOf("CONFIG_MITIGATION_CALL_DEPTH_TRACKING=y")
	for _, c := range []struct {
		name     string
		cfg      kconfig
		cmd      string
		retbleed string
		rbOK     bool
		vulnOK   bool
		its      string
		want     string
	}{
		{"stuffing", cdt, "retbleed=stuff", "Mitigation: Stuffing", true, true, "Not affected", "on"},
		{"its stuffing", cdt, "", "Mitigation: Enhanced IBRS", true, true, "Mitigation: Retpolines, Stuffing RSB", "on"},
		{"built, unused", cdt, "", "Mitigation: IBRS", true, true, "", "off"},
		{"not built", cfgOf("# CONFIG_MITIGATION_CALL_DEPTH_TRACKING is not set"), "", "Mitigation: IBRS", true, true, "", "off (not built in)"},
		{"predates retbleed", kconfig{}, "", "unknown (no retbleed)", false, true, "", "off (kernel predates retbleed reporting)"},
		{"no sysfs", kconfig{}, "retbleed=stuff", "unknown", false, false, "", "unknown (retbleed=stuff on cmdline; no retbleed file)"},
	} {
		if got := detectCallDepth(c.cfg, parseCmdline(c.cmd), c.retbleed, c.rbOK, c.vulnOK, c.its); got != c.want {
			t.Errorf("%s: detectCallDepth = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRunstampOverride: the passes of one `make bench` share a runstamp
// through BPFBENCH_RUNSTAMP; without it, or with a value that cannot be a
// label, the run's own start time is used.
func TestRunstampOverride(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for env, want := range map[string]string{
		"20261201T115603Z": "20261201T115603Z",
		"":                 "20261201T100000Z",
		"a\nb":             "20261201T100000Z",
	} {
		s := source{getenv: func(k string) string {
			if k == "BPFBENCH_RUNSTAMP" {
				return env
			}
			return ""
		}, start: start}
		if got := runstamp(s); got != want {
			t.Errorf("BPFBENCH_RUNSTAMP=%q: runstamp %q, want %q", env, got, want)
		}
	}
}

func TestQEMUCPU(t *testing.T) {
	for env, want := range map[string]string{
		"":               "none",
		"Skylake-Client": "Skylake-Client",
		"EPYC-Milan-v2":  "EPYC-Milan-v2",
		"max,-pcid":      "max,-pcid",
		"max\nx":         `unknown (BPFBENCH_QEMU_CPU "max\nx")`,
	} {
		s := source{getenv: func(k string) string {
			if k == "BPFBENCH_QEMU_CPU" {
				return env
			}
			return ""
		}}
		if got := qemuCPU(s); got != want {
			t.Errorf("BPFBENCH_QEMU_CPU=%q: %q, want %q", env, got, want)
		}
	}
}

// TestDescribeCommit: a run's commit label is -dirty only when a tracked
// file differs from the commit; the results of an earlier run, untracked
// in the tree, leave it clean.
func TestDescribeCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write("code.go", "package x\n")
	git("add", "code.go")
	git("commit", "-q", "-m", "one")
	head := git("rev-parse", "--short", "HEAD")

	write("results/20261204T000000Z-aa1.txt", "BenchmarkX 1 1 ns/op\n")
	if got := describeCommit(dir); got != head {
		t.Errorf("with an untracked results file: %q, want %q", got, head)
	}
	write("code.go", "package y\n")
	if got := describeCommit(dir); got != head+"-dirty" {
		t.Errorf("with a tracked file changed: %q, want %q", got, head+"-dirty")
	}
	if got := describeCommit(t.TempDir()); !strings.HasPrefix(got, "unknown") {
		t.Errorf("outside a checkout: %q, want unknown", got)
	}
}
