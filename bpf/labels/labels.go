package labels

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Label is one benchfmt configuration line.
type Label struct{ Key, Value string }

// Commit is set with -ldflags "-X bpfbench/bpf/labels.Commit=..." by the Makefile;
// when empty, Labels asks git.
var Commit string

// processStart is read once so that every Labels call in one process prints
// the same runstamp: benchstat groups results by it.
var processStart = time.Now().UTC()

// Labels reads the running system. It never fails: a source that cannot be
// read gives "unknown (<reason>)".
func All() []Label { return labelsFrom(liveSource()) }

// Write prints ls as benchfmt configuration lines, in order. It refuses
// a label that benchfmt would misread rather than corrupt the results file.
func Write(w io.Writer, ls []Label) error {
	var b bytes.Buffer
	for _, l := range ls {
		if err := checkLabel(l); err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s: %s\n", l.Key, l.Value)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// checkLabel applies benchfmt's rules: the key starts lower case and has no
// space, upper case or colon; an empty value would delete the key.
func checkLabel(l Label) error {
	for i, r := range l.Key {
		if (i == 0 && !unicode.IsLower(r)) || unicode.IsSpace(r) || unicode.IsUpper(r) || r == ':' {
			return fmt.Errorf("label key %q: not a benchfmt key", l.Key)
		}
	}
	if l.Key == "" || strings.TrimSpace(l.Value) == "" || strings.ContainsAny(l.Value, "\r\n") {
		return fmt.Errorf("label %q: value %q is empty or has a newline", l.Key, l.Value)
	}
	return nil
}

// source is everything labelsFrom reads, so that tests can replay other
// machines' files.
type source struct {
	readFile func(path string) ([]byte, error)
	getenv   func(key string) string
	// hvSignature is the CPUID leaf 0x40000000 vendor string, "" if unknown.
	hvSignature func() string
	commit      func() string
	start       time.Time
}

func liveSource() source {
	return source{readFile: os.ReadFile, getenv: os.Getenv, hvSignature: cpuidHypervisor, commit: gitCommit, start: processStart}
}

const vulnDir = "/sys/devices/system/cpu/vulnerabilities/"

// read returns the trimmed file with newlines folded to spaces, or
// "unknown (<reason>)" and false.
func (s source) read(path string) (string, bool) {
	b, err := s.readFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "unknown (no " + path + ")", false
	case err != nil:
		return oneLine(fmt.Sprintf("unknown (%v)", err)), false
	}
	v := oneLine(string(b))
	if v == "" {
		return "unknown (empty " + path + ")", false
	}
	return v, true
}

func oneLine(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r", " ", "\n", " ", "\t", " ").Replace(s))
}

func labelsFrom(s source) []Label {
	release, releaseOK := s.read("/proc/sys/kernel/osrelease")
	version, versionOK := s.read("/proc/sys/kernel/version")
	cmdlineRaw, cmdOK := s.read("/proc/cmdline")
	var cmd cmdline
	mitigations, cmdMitigations := cmdlineRaw, cmdlineRaw
	if cmdOK {
		cmd = parseCmdline(cmdlineRaw)
		mitigations, cmdMitigations = cmd.last("mitigations", "default"), cmd.mitigationOptions()
	}
	cpuRaw, _ := s.readFile("/proc/cpuinfo")
	cpu := parseCPUInfo(string(cpuRaw))
	cfg := s.kernelConfig(release, releaseOK)

	vuln := func(name string) (string, bool) { return s.read(vulnDir + name) }
	v2, v2ok := vuln("spectre_v2")
	retbleed, retbleedOK := vuln("retbleed")
	srso, _ := vuln("spec_rstack_overflow")
	v1, _ := vuln("spectre_v1")
	meltdown, _ := vuln("meltdown")
	its, _ := vuln("indirect_target_selection")

	retpoline := parseSpectreV2(v2)
	if !v2ok {
		retpoline = "unknown (no spectre_v2 file)"
		if cmd.mitigationsOff() {
			retpoline = "off (mitigations off on cmdline)"
		}
	}

	var syms kallsyms
	if !cfg.known() {
		// kallsyms is read only without a config: it is 10 MB.
		syms = s.kallsyms()
	}
	sysctl := func(p string) string { v, _ := s.read(p); return v }
	clocksources, _ := s.readFile("/sys/devices/system/clocksource/clocksource0/available_clocksource")
	xen, _ := s.readFile("/sys/hypervisor/type")
	dmiVendor, _ := s.readFile("/sys/class/dmi/id/sys_vendor")
	debugPreempt, _ := s.readFile("/sys/kernel/debug/sched/preempt")
	unameV := ""
	if versionOK {
		unameV = version
	}

	virt := detectVirt(s.getenv("BPFBENCH_VIRT"), s.hvSignature(), oneLine(string(xen)), cpu, string(clocksources), oneLine(string(dmiVendor)))
	return []Label{
		{"cpu-vendor", cpu.vendor()},
		{"cpu-family-model", cpu.familyModel()},
		{"kernel", release},
		{"kernel-version", version},
		{"virt", virt},
		{"icount-shift", icountShift(s, virt)},
		{"qemu-cpu", qemuCPU(s)},
		{"mitigations", mitigations},
		{"cmdline-mitigations", cmdMitigations},
		{"spectre-v2", v2},
		{"retbleed", retbleed},
		{"spec-rstack-overflow", srso},
		{"spectre-v1", v1},
		{"meltdown", meltdown},
		{"its", its},
		{"retpoline", retpoline},
		{"ibt", detectIBT(cfg, cmd, cpu)},
		{"cfi", detectCFI(cfg, cmd, syms, cpu)},
		{"call-depth-tracking", detectCallDepth(cfg, cmd, retbleed, retbleedOK, v2ok, its)},
		{"bpf-jit-enable", sysctl("/proc/sys/net/core/bpf_jit_enable")},
		{"bpf-jit-harden", sysctl("/proc/sys/net/core/bpf_jit_harden")},
		{"bpf-jit-kallsyms", sysctl("/proc/sys/net/core/bpf_jit_kallsyms")},
		{"bpf-stats-enabled", sysctl("/proc/sys/kernel/bpf_stats_enabled")},
		// How long the kernel waits on a grace period: the dispatcher's
		// rebuild row pays one in every call.
		{"rcu-expedited", sysctl("/sys/kernel/rcu_expedited")},
		{"preempt", parsePreempt(string(debugPreempt), unameV, cfg, cmd)},
		{"hz", cfg.value("CONFIG_HZ")},
		// What the thread clock leaves out: with these the task's runtime
		// excludes interrupt time and a vCPU's steal time, which the
		// kernel's own loop timer (ktime) includes.
		{"irq-time-accounting", cfg.yesNo("CONFIG_IRQ_TIME_ACCOUNTING")},
		{"paravirt-time-accounting", cfg.yesNo("CONFIG_PARAVIRT_TIME_ACCOUNTING")},
		{"smt", smtLabel(s)},
		{"cpu-governor", governorLabel(s)},
		{"commit", s.commit()},
		{"runstamp", runstamp(s)},
	}
}

// Icount is the virt label of a guest whose clocks count instructions
// (QEMU's -icount, tools/vmexec's VMEXEC_ICOUNT).
const Icount = "tcg-icount"

// icountShift is the icount shift S of an instruction-counting guest, as
// its runner says (BPFBENCH_ICOUNT_SHIFT): each instruction advances the
// clocks by 2^S ns. "none" where the clocks keep time.
func icountShift(s source, virt string) string {
	if virt != Icount {
		return "none"
	}
	v := s.getenv("BPFBENCH_ICOUNT_SHIFT")
	if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 10 {
		return "unknown (BPFBENCH_ICOUNT_SHIFT " + strconv.Quote(v) + ")"
	}
	return v
}

// qemuCPU is the QEMU CPU model a guest of tools/vmexec runs on
// (BPFBENCH_QEMU_CPU), "none" elsewhere: under TCG the kernel picks its
// mitigations from the model, so boots on two models differ as two
// machines do.
func qemuCPU(s source) string {
	v := strings.TrimSpace(s.getenv("BPFBENCH_QEMU_CPU"))
	if v == "" {
		return "none"
	}
	if checkLabel(Label{"qemu-cpu", v}) != nil {
		return "unknown (BPFBENCH_QEMU_CPU " + strconv.Quote(v) + ")"
	}
	return v
}

// runstamp is when the run started, or BPFBENCH_RUNSTAMP when `make
// bench` runs the suite in several passes that make one run.
func runstamp(s source) string {
	if v := strings.TrimSpace(s.getenv("BPFBENCH_RUNSTAMP")); v != "" && checkLabel(Label{"runstamp", v}) == nil {
		return v
	}
	return s.start.UTC().Format("20060102T150405Z")
}

// gitCommit describes the checkout the benchmark was built from when the
// Makefile did not stamp Commit.
func gitCommit() string {
	if Commit != "" {
		return Commit
	}
	return describeCommit(".")
}

// describeCommit is the commit checked out in dir, with -dirty when a
// tracked file differs from it. An untracked file (the results of the
// run before, lying in results/) changes no code, as the Makefile's
// COMMIT says too.
func describeCommit(dir string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	git := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		return cmd.Output()
	}
	out, err := git("rev-parse", "--short", "HEAD")
	if err != nil {
		return "unknown (git rev-parse HEAD failed)"
	}
	c := strings.TrimSpace(string(out))
	if st, err := git("status", "--porcelain", "--untracked-files=no"); err != nil {
		c += "-unknown-status"
	} else if len(bytes.TrimSpace(st)) > 0 {
		c += "-dirty"
	}
	return c
}
