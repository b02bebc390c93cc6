package labels

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"
)

// The label parsers read text the running kernel (or a guest's) hands
// over: /proc/cmdline, /proc/cpuinfo, the kernel config, the
// vulnerabilities files, debugfs. Whatever it holds, a parser must not
// panic or hang, and what it makes of it must be a label Write accepts,
// or the suite refuses to run (bench/main_test.go exits when Write
// fails). The seeds are the fixture machines' files.

// fixtureFiles returns every file of one kind (its path below a fixture
// machine, e.g. "proc/cmdline") from testdata/labels.
func fixtureFiles(f *testing.F, rel string) [][]byte {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "labels", "*", filepath.FromSlash(rel)))
	if err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// checkValue fails unless v is a value Write accepts and benchfmt reads
// back unchanged.
func checkValue(t *testing.T, what, v string) {
	t.Helper()
	if err := checkLabel(Label{"x", v}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got := roundTrip(t, []Label{{"x", v}}); len(got) != 1 || got[0].Value != v {
		t.Fatalf("%s: %q reads back as %q", what, v, got)
	}
}

// roundTrip writes ls and reads them back with benchfmt.
func roundTrip(t *testing.T, ls []Label) []Label {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, ls); err != nil {
		t.Fatal(err)
	}
	r := benchfmt.NewReader(strings.NewReader(buf.String()+"BenchmarkX 1 1 ns/op\n"), "labels.txt")
	var got []Label
	for r.Scan() {
		if res, ok := r.Result().(*benchfmt.Result); ok {
			for _, c := range res.Config {
				if c.File {
					got = append(got, Label{c.Key, string(c.Value)})
				}
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func FuzzParseCmdline(f *testing.F) {
	for _, b := range fixtureFiles(f, "proc/cmdline") {
		f.Add(string(b))
	}
	f.Add(`BOOT_IMAGE=/vmlinuz dyndbg="file foo.c +p" mitigations=auto,nosmt -- init -- spectre_v2=off`)
	f.Fuzz(func(t *testing.T, s string) {
		raw := oneLine(s) // as source.read hands it over
		if raw == "" {
			return
		}
		c := parseCmdline(raw)
		for _, o := range c {
			if o == "" || o == "--" {
				t.Fatalf("parseCmdline(%q) kept %q", raw, o)
			}
		}
		checkValue(t, "mitigations", c.last("mitigations", "default"))
		checkValue(t, "cmdline-mitigations", c.mitigationOptions())
		_ = c.mitigationsOff()
		_ = c.has("nopti")
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("CONFIG_HZ=250\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_CFI_CLANG=y\nCONFIG_FINEIBT=y\n"))
	f.Add([]byte("CONFIG_HZ=\"1000\"\r\nCONFIG_X86_KERNEL_IBT=y\n# CONFIG_CFI_AUTO_DEFAULT is not set\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg := kconfig{vals: parseConfig(b)}
		for k := range cfg.vals {
			if !strings.HasPrefix(k, "CONFIG_") {
				t.Fatalf("parseConfig kept %q", k)
			}
		}
		checkValue(t, "hz", cfg.value("CONFIG_HZ"))
		checkValue(t, "irq-time-accounting", cfg.yesNo("CONFIG_IRQ_TIME_ACCOUNTING"))
		cpu := parseCPUInfo("flags\t: ibt hypervisor\n")
		checkValue(t, "ibt", detectIBT(cfg, nil, cpu))
		checkValue(t, "cfi", detectCFI(cfg, parseCmdline("cfi=auto"), kallsyms{}, cpu))
		checkValue(t, "call-depth-tracking", detectCallDepth(cfg, nil, "", false, false, ""))
		checkValue(t, "preempt", parsePreempt("", "#1 SMP PREEMPT_DYNAMIC", cfg, nil))
	})
}

func FuzzParseCPUInfo(f *testing.F) {
	for _, b := range fixtureFiles(f, "proc/cpuinfo") {
		f.Add(string(b))
	}
	f.Add("CPU implementer\t: 0x41\nCPU part\t: 0xd0c\n")
	f.Fuzz(func(t *testing.T, s string) {
		ci := parseCPUInfo(s)
		checkValue(t, "cpu-vendor", ci.vendor())
		checkValue(t, "cpu-family-model", ci.familyModel())
		checkValue(t, "ibt", detectIBT(kconfig{why: "no config"}, nil, ci))
		checkValue(t, "cfi", detectCFI(kconfig{why: "no config"}, nil, kallsyms{cfi: true, fineIBT: true}, ci))
	})
}

// FuzzVulnerabilities: the vulnerabilities files' strings (spectre_v2,
// retbleed, indirect_target_selection) and what is derived from them.
func FuzzVulnerabilities(f *testing.F) {
	v2 := fixtureFiles(f, "sys/devices/system/cpu/vulnerabilities/spectre_v2")
	rb := fixtureFiles(f, "sys/devices/system/cpu/vulnerabilities/retbleed")
	for i, b := range v2 {
		r := []byte("Not affected")
		if i < len(rb) {
			r = rb[i]
		}
		f.Add(string(b), string(r), "Mitigation: Aligned branch/return thunks")
	}
	f.Add("Mitigation: Retpolines, IBPB: conditional, IBRS_FW, STIBP: disabled, RSB filling", "Mitigation: Stuffing", "Mitigation: Retpolines, Stuffing RSB")
	f.Add("Vulnerable: AMD retpoline (lfence)", "", "Vulnerable")
	f.Fuzz(func(t *testing.T, spectreV2, retbleed, its string) {
		// As source.read hands them over: folded to one line, or unknown.
		spectreV2, retbleed, its = oneLine(spectreV2), oneLine(retbleed), oneLine(its)
		if spectreV2 == "" {
			spectreV2 = "unknown (empty)"
		}
		checkValue(t, "retpoline", parseSpectreV2(spectreV2))
		cmd := parseCmdline("retbleed=stuff")
		for _, cfg := range []kconfig{{why: "no config"}, {vals: map[string]string{"CONFIG_CALL_DEPTH_TRACKING": "y"}}} {
			for _, ok := range []bool{true, false} {
				checkValue(t, "call-depth-tracking", detectCallDepth(cfg, cmd, retbleed, ok, !ok, its))
			}
		}
	})
}

func FuzzParsePreempt(f *testing.F) {
	for _, b := range fixtureFiles(f, "proc/sys/kernel/version") {
		f.Add("", string(b), "")
	}
	f.Add("none voluntary (full) lazy\n", "#1 SMP PREEMPT_DYNAMIC", "preempt=full")
	f.Fuzz(func(t *testing.T, debugfs, unameV, cmdline string) {
		cmd := parseCmdline(oneLine(cmdline))
		for _, cfg := range []kconfig{{why: "no config"}, {vals: map[string]string{"CONFIG_PREEMPT_DYNAMIC": "y", "CONFIG_PREEMPT": "y"}}} {
			checkValue(t, "preempt", parsePreempt(debugfs, oneLine(unameV), cfg, cmd))
		}
	})
}

func FuzzKallsyms(f *testing.F) {
	f.Add([]byte("ffffffff81000000 T _text\nffffffff81001000 t __cfi_foo\nffffffff81002000 T fineibt_preamble_start\n"))
	f.Add([]byte("0000000000000000 T _text\n0000000000000000 t __cfi_foo\n"))
	f.Add([]byte("x\n\n  \t\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := source{readFile: func(string) ([]byte, error) { return b, nil }}
		k := s.kallsyms()
		cpu := parseCPUInfo("flags\t: ibt\n")
		checkValue(t, "cfi", detectCFI(kconfig{why: "no config"}, parseCmdline("cfi=kcfi"), k, cpu))
	})
}

// FuzzLabels runs the whole of labelsFrom on a machine made of fuzzed
// files: every label it returns must be written and read back unchanged.
func FuzzLabels(f *testing.F) {
	f.Add("6.18.0", "#1 SMP PREEMPT_DYNAMIC", "mitigations=auto", "vendor_id\t: GenuineIntel\nflags\t: hypervisor\n",
		"CONFIG_HZ=250\n", "Mitigation: Retpolines", "Not affected", "Not affected", "", "1", "performance", "KVMKVMKVM", "", "", "", "")
	f.Add("", "", "", "", "", "", "", "", "", "2", "", "TCGTCGTCGTCG", "20260102T030405Z", "QEMU", "", "ffffffff81000000 t __cfi_foo\n")
	f.Add("6.1.0", "#1 SMP PREEMPT", "cfi=kcfi ibt=off", "model name\t: QEMU TCG CPU version 2.5+\n", "# CONFIG_HZ is not set", "Vulnerable", "Mitigation: Stuffing", "Vulnerable", "none (voluntary) full", "0", "schedutil", "", "bad runstamp", "Xen", "xen", "")
	f.Fuzz(func(t *testing.T, release, version, cmdline, cpuinfo, config, spectreV2, retbleed, its, preempt, smt, governor, hv, runstamp, dmi, xen, kallsyms string) {
		files := map[string]string{
			"/proc/sys/kernel/osrelease":                                         release,
			"/proc/sys/kernel/version":                                           version,
			"/proc/cmdline":                                                      cmdline,
			"/proc/cpuinfo":                                                      cpuinfo,
			"/boot/config-" + oneLine(release):                                   config,
			vulnDir + "spectre_v2":                                               spectreV2,
			vulnDir + "retbleed":                                                 retbleed,
			vulnDir + "indirect_target_selection":                                its,
			"/sys/kernel/debug/sched/preempt":                                    preempt,
			"/sys/devices/system/cpu/smt/active":                                 smt,
			"/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor":              governor,
			"/sys/class/dmi/id/sys_vendor":                                       dmi,
			"/sys/devices/system/clocksource/clocksource0/available_clocksource": "kvm-clock tsc",
		}
		src := source{
			readFile: func(p string) ([]byte, error) {
				if v, ok := files[p]; ok && v != "" {
					return []byte(v), nil
				}
				return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
			},
			getenv: func(k string) string {
				if k == "BPFBENCH_RUNSTAMP" {
					return runstamp
				}
				return ""
			},
			hvSignature: func() string { return hv },
			commit:      func() string { return "fuzz" },
			start:       time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		}
		ls := labelsFrom(src)
		for _, l := range ls {
			if err := checkLabel(l); err != nil {
				t.Fatalf("label %s: %v", l.Key, err)
			}
		}
		if got := roundTrip(t, ls); !slices.Equal(got, ls) {
			t.Fatalf("benchfmt read back\n%q\nwant\n%q", got, ls)
		}
	})
}
