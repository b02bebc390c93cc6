package labels

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
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

// runstamp is when the run started, or BPFBENCH_RUNSTAMP when `make
// bench` runs the suite in several passes that make one run.
func runstamp(s source) string {
	if v := strings.TrimSpace(s.getenv("BPFBENCH_RUNSTAMP")); v != "" && checkLabel(Label{"runstamp", v}) == nil {
		return v
	}
	return s.start.UTC().Format("20060102T150405Z")
}

// smtLabel says whether SMT siblings share the machine's cores (a sibling's
// work slows the measuring CPU), as /sys/devices/system/cpu/smt says.
func smtLabel(s source) string {
	v, ok := s.read("/sys/devices/system/cpu/smt/active")
	switch {
	case !ok:
		return v
	case v == "1":
		return "on"
	case v == "0":
		return "off"
	}
	return "unknown (smt/active reads " + v + ")"
}

// governorLabel is the cpufreq governor of CPU 0, or none when the kernel
// exposes no frequency scaling (as in most VMs: the host decides).
func governorLabel(s source) string {
	v, ok := s.read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
	if !ok {
		if _, err := s.readFile("/sys/devices/system/cpu/cpu0/cpufreq"); errors.Is(err, fs.ErrNotExist) {
			return "none (no cpufreq)"
		}
		return v
	}
	return v
}

// cmdline is the kernel command line's options, without init's arguments.
type cmdline []string

// parseCmdline splits like the kernel's next_arg: on blanks outside double
// quotes, stopping at a lone "--", after which the words belong to init.
func parseCmdline(s string) cmdline {
	var out cmdline
	var cur strings.Builder
	quoted := false
	flush := func() bool {
		w := cur.String()
		cur.Reset()
		if w == "--" {
			return false
		}
		if w != "" {
			out = append(out, w)
		}
		return true
	}
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case unicode.IsSpace(r) && !quoted:
			if !flush() {
				return out
			}
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}

// values are the values of every name=value option, in order.
func (c cmdline) values(name string) []string {
	var vs []string
	for _, o := range c {
		if k, v, ok := strings.Cut(o, "="); ok && k == name {
			vs = append(vs, strings.Trim(v, `"`))
		}
	}
	return vs
}

// last is the value of the last name=value option (the one the kernel
// keeps), or def. A blank value (mitigations=), which the kernel's
// parsers reject and ignore, is skipped.
func (c cmdline) last(name, def string) string {
	vs := c.values(name)
	for i := len(vs) - 1; i >= 0; i-- {
		if v := oneLine(vs[i]); v != "" {
			return v
		}
	}
	return def
}

func (c cmdline) has(option string) bool {
	for _, o := range c {
		if o == option {
			return true
		}
	}
	return false
}

func (c cmdline) mitigationsOff() bool {
	return c.last("mitigations", "") == "off" || c.last("spectre_v2", "") == "off" || c.has("nospectre_v2")
}

// mitigationParams are the options that change speculation mitigations,
// CFI or IBT, and so the cost of calls; `mitigations=` has its own label.
var mitigationParams = map[string]bool{
	"spectre_v2": true, "spectre_v2_user": true, "nospectre_v1": true, "nospectre_v2": true,
	"spectre_bhi": true, "nospectre_bhb": true, "spec_store_bypass_disable": true,
	"nospec_store_bypass_disable": true, "ssbd": true, "retbleed": true, "spec_rstack_overflow": true,
	"pti": true, "nopti": true, "kpti": true, "l1tf": true, "mds": true, "tsx": true,
	"tsx_async_abort": true, "mmio_stale_data": true, "srbds": true, "gather_data_sampling": true,
	"reg_file_data_sampling": true, "indirect_target_selection": true, "tsa": true, "vmscape": true,
	"cfi": true, "ibt": true, "nosmt": true, "l1d_flush": true, "kvm.nx_huge_pages": true,
	"kvm-intel.vmentry_l1d_flush": true, "arm64.nobti": true, "arm64.nopauth": true,
	// Red Hat's and old distribution kernels' own switches.
	"noibrs": true, "noibpb": true, "ibrs": true, "ibpb": true, "retp": true,
}

func (c cmdline) mitigationOptions() string {
	var out []string
	for _, o := range c {
		if k, _, _ := strings.Cut(o, "="); mitigationParams[k] {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// cpuInfo is the first processor's block of /proc/cpuinfo.
type cpuInfo struct {
	fields map[string]string
	flags  map[string]bool // nil when there is no flags line (not x86)
}

func parseCPUInfo(s string) cpuInfo {
	ci := cpuInfo{fields: map[string]string{}}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			if strings.TrimSpace(line) == "" && len(ci.fields) > 0 {
				break // end of the first processor
			}
			continue
		}
		ci.fields[strings.TrimSpace(k)] = oneLine(v)
	}
	if f, ok := ci.fields["flags"]; ok {
		ci.flags = map[string]bool{}
		for _, w := range strings.Fields(f) {
			ci.flags[w] = true
		}
	}
	return ci
}

func (c cpuInfo) vendor() string {
	if v := c.fields["vendor_id"]; v != "" {
		return v
	}
	if v := c.fields["CPU implementer"]; v != "" {
		return "implementer " + v // arm64
	}
	return "unknown (no vendor_id in /proc/cpuinfo)"
}

func (c cpuInfo) familyModel() string {
	if f, m := c.fields["cpu family"], c.fields["model"]; f != "" && m != "" {
		return f + "/" + m
	}
	if p := c.fields["CPU part"]; p != "" {
		return "part " + p
	}
	return "unknown (no cpu family in /proc/cpuinfo)"
}

// kconfig is the running kernel's build configuration; vals is nil when no
// config could be read, and why says so.
type kconfig struct {
	vals map[string]string
	why  string
}

func (s source) kernelConfig(release string, releaseOK bool) kconfig {
	var whys []string
	if b, err := s.readFile("/proc/config.gz"); err == nil {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err == nil {
			b, err = io.ReadAll(zr)
		}
		if err == nil {
			return kconfig{vals: parseConfig(b)}
		}
		whys = append(whys, fmt.Sprintf("/proc/config.gz: %v", err))
	} else if errors.Is(err, fs.ErrNotExist) {
		whys = append(whys, "no /proc/config.gz")
	} else {
		whys = append(whys, err.Error())
	}
	p := "/boot/config-" + release
	if !releaseOK {
		whys = append(whys, "kernel release unknown")
	} else if b, err := s.readFile(p); err == nil {
		return kconfig{vals: parseConfig(b)}
	} else if errors.Is(err, fs.ErrNotExist) {
		whys = append(whys, "no "+p)
	} else {
		whys = append(whys, err.Error())
	}
	return kconfig{why: strings.Join(whys, ", ")}
}

// parseConfig reads .config syntax; "# CONFIG_X is not set" becomes "n" so
// that a known-absent option differs from an option this kernel predates.
func parseConfig(b []byte) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, ok := strings.CutSuffix(strings.TrimPrefix(line, "# "), " is not set"); ok && strings.HasPrefix(line, "# CONFIG_") {
			m[name] = "n"
		} else if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "CONFIG_") {
			m[k] = oneLine(strings.Trim(strings.TrimSpace(v), `"`))
		}
	}
	return m
}

func (k kconfig) known() bool { return k.vals != nil }

// on reports whether any of names is built in (options get renamed).
func (k kconfig) on(names ...string) bool {
	for _, n := range names {
		if v := k.vals[n]; v == "y" || v == "m" {
			return true
		}
	}
	return false
}

// yesNo is y or n for a boolean option, or unknown without a config.
func (k kconfig) yesNo(name string) string {
	if !k.known() {
		return k.value(name)
	}
	if k.on(name) {
		return "y"
	}
	return "n"
}

func (k kconfig) value(name string) string {
	if !k.known() {
		return "unknown (" + k.why + ")"
	}
	if v, ok := k.vals[name]; ok && v != "" {
		return v
	}
	return "unknown (no " + name + " in kernel config)"
}

// parseSpectreV2 names the indirect-call thunk that a spectre_v2 vulnerability
// string implies: "on" (retpoline), "lfence" (lfence; jmp, which kernels
// before 5.17 called "AMD retpoline"), "minimal" (retpolines in assembly
// only: the compiler lacked them), or "off". Only the mode, before the first
// "," (kernels before 6.9) or ";" (later), is read: the rest (IBPB, STIBP,
// RSB filling, BHI: Retpoline...) does not change the thunk.
func parseSpectreV2(s string) string {
	mode := strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexAny(mode, ",;"); i >= 0 {
		mode = mode[:i]
	}
	switch {
	case strings.Contains(mode, "minimal"):
		return "minimal"
	case strings.Contains(mode, "amd retpoline"), strings.Contains(mode, "lfence"):
		return "lfence"
	case strings.Contains(mode, "retpoline"):
		return "on"
	case strings.HasPrefix(mode, "mitigation:"), strings.HasPrefix(mode, "vulnerable"), mode == "not affected":
		return "off"
	}
	return oneLine("unknown (unrecognised spectre_v2: " + s + ")")
}

// detectIBT: the cpuinfo flag means the CPU has IBT and no ibt=off cleared
// it; the kernel enforces IBT only when built with X86_KERNEL_IBT.
func detectIBT(cfg kconfig, cmd cmdline, cpu cpuInfo) string {
	switch {
	case cmd.last("ibt", "") == "off":
		return "off (ibt=off)"
	case cpu.flags == nil:
		return "unknown (no flags in /proc/cpuinfo)"
	case !cpu.flags["ibt"]:
		return "off (cpu lacks ibt)"
	case !cfg.known():
		return "unknown (cpu has ibt; " + cfg.why + ")"
	case cfg.on("CONFIG_X86_KERNEL_IBT"):
		return "on"
	}
	return "off (kernel built without X86_KERNEL_IBT)"
}

// kallsyms is what /proc/kallsyms says about CFI.
type kallsyms struct {
	why     string // non-empty when the symbols cannot be trusted
	cfi     bool   // __cfi_ preambles: clang kCFI is built in
	fineIBT bool   // fineibt_preamble_start: FineIBT is built in
}

func (s source) kallsyms() kallsyms {
	b, err := s.readFile("/proc/kallsyms")
	if errors.Is(err, fs.ErrNotExist) {
		return kallsyms{why: "no /proc/kallsyms"}
	} else if err != nil {
		return kallsyms{why: err.Error()}
	}
	var k kallsyms
	nonzero := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		nonzero = nonzero || strings.Trim(f[0], "0") != ""
		k.cfi = k.cfi || strings.HasPrefix(f[2], "__cfi_")
		k.fineIBT = k.fineIBT || f[2] == "fineibt_preamble_start"
	}
	if !nonzero {
		// kptr_restrict hides addresses, and with them whether the
		// list is complete.
		return kallsyms{why: "kallsyms addresses hidden"}
	}
	return k
}

// detectCFI names the CFI scheme the kernel runs: clang's kCFI, FineIBT (kCFI
// hashes checked by the callee behind an ENDBR, patched in at boot), or off.
// FineIBT is chosen at boot when the kernel was built with FINEIBT and the
// mode is "auto" (cfi=auto, or CFI_AUTO_DEFAULT=y, or kernels before that
// option existed) and the CPU has IBT; cfi=kcfi|fineibt|off choose directly.
func detectCFI(cfg kconfig, cmd cmdline, syms kallsyms, cpu cpuInfo) string {
	var fine bool
	mode := "auto"
	switch {
	case cfg.known():
		if !cfg.on("CONFIG_CFI_CLANG", "CONFIG_CFI") { // renamed in 6.18
			return "off"
		}
		fine = cfg.on("CONFIG_FINEIBT")
		if _, ok := cfg.vals["CONFIG_CFI_AUTO_DEFAULT"]; ok && !cfg.on("CONFIG_CFI_AUTO_DEFAULT") {
			mode = "kcfi"
		}
	case syms.why != "":
		return "unknown (" + cfg.why + "; " + syms.why + ")"
	case !syms.cfi:
		return "off (no __cfi_ symbols)"
	default:
		fine = syms.fineIBT
	}
	if !fine {
		return "kcfi" // cfi= is parsed only by FineIBT kernels
	}
	for _, v := range cmd.values("cfi") {
		for _, w := range strings.Split(v, ",") {
			if w == "auto" || w == "kcfi" || w == "fineibt" || w == "off" {
				mode = w
			}
		}
	}
	switch {
	case mode != "auto":
		return mode // fineibt is patched in even without IBT
	case cpu.flags == nil:
		return "unknown (kcfi built in; fineibt chosen at boot if cpu has ibt)"
	case !cpu.flags["ibt"]:
		return "kcfi"
	case !cfg.known():
		return "unknown (kcfi built in; fineibt chosen at boot if CFI_AUTO_DEFAULT)"
	}
	return "fineibt"
}

// detectCallDepth: call depth tracking (return thunks that count calls,
// "stuffing") runs only when retbleed or ITS reports stuffing.
func detectCallDepth(cfg kconfig, cmd cmdline, retbleed string, retbleedOK, vulnOK bool, its string) string {
	switch {
	case strings.Contains(retbleed, "Stuffing") || strings.Contains(its, "Stuffing"):
		return "on"
	case cfg.known() && !cfg.on("CONFIG_CALL_DEPTH_TRACKING", "CONFIG_MITIGATION_CALL_DEPTH_TRACKING"):
		return "off (not built in)"
	case retbleedOK:
		return "off"
	case cmd.last("retbleed", "") == "stuff":
		return "unknown (retbleed=stuff on cmdline; no retbleed file)"
	case vulnOK:
		// Call depth tracking (6.2) came after retbleed reporting (5.19).
		return "off (kernel predates retbleed reporting)"
	}
	return "unknown (no vulnerabilities files)"
}

// parsePreempt: debugfs tells the live mode ("none voluntary (full) lazy");
// without it, PREEMPT_DYNAMIC kernels only say how they booted.
func parsePreempt(debugfs, unameV string, cfg kconfig, cmd cmdline) string {
	if i, j := strings.Index(debugfs, "("), strings.Index(debugfs, ")"); i >= 0 && j > i {
		if mode := oneLine(debugfs[i+1 : j]); mode != "" {
			return mode
		}
	}
	words := strings.Fields(unameV)
	has := func(w string) bool {
		for _, x := range words {
			if x == w {
				return true
			}
		}
		return false
	}
	static := func() string {
		for _, m := range []struct{ opt, mode string }{
			{"CONFIG_PREEMPT_LAZY", "lazy"}, {"CONFIG_PREEMPT", "full"},
			{"CONFIG_PREEMPT_VOLUNTARY", "voluntary"}, {"CONFIG_PREEMPT_NONE", "none"},
		} {
			if cfg.on(m.opt) {
				return m.mode
			}
		}
		return ""
	}
	switch {
	case has("PREEMPT_RT") || cfg.on("CONFIG_PREEMPT_RT"):
		return "rt"
	case has("PREEMPT_DYNAMIC") || cfg.on("CONFIG_PREEMPT_DYNAMIC"):
		boot := static()
		if p := cmd.last("preempt", ""); p != "" {
			boot = p
		}
		if boot == "" {
			return "dynamic (mode unknown: no debugfs)"
		}
		return "dynamic (boot mode " + boot + "; no debugfs)"
	case has("PREEMPT"):
		return "full"
	}
	if m := static(); m != "" {
		return m
	}
	if unameV == "" {
		return "unknown (no debugfs, uname -v or kernel config)"
	}
	return "unknown (no PREEMPT in uname -v: none or voluntary)"
}

// detectVirt names the hypervisor: the runner's override, then CPUID's
// hypervisor signature, then what the guest kernel found (Xen's sysfs,
// kvm-clock), then QEMU's TCG model name, then DMI.
func detectVirt(override, hvSig, xen string, cpu cpuInfo, clocksources, dmiVendor string) string {
	if o := oneLine(override); o != "" {
		return o
	}
	switch strings.Trim(hvSig, "\x00 ") {
	case "":
	case "KVMKVMKVM":
		return "kvm"
	case "TCGTCGTCGTCG":
		return "tcg"
	case "Microsoft Hv":
		return "hyperv"
	case "VMwareVMware":
		return "vmware"
	case "XenVMMXenVMM":
		return "xen"
	default:
		return "unknown (cpuid hypervisor " + oneLine(strings.Trim(hvSig, "\x00")) + ")"
	}
	if xen != "" {
		return xen // /sys/hypervisor/type: "xen"
	}
	if cpu.flags != nil && !cpu.flags["hypervisor"] {
		return "none"
	}
	cs := strings.Fields(clocksources)
	for _, c := range cs {
		switch c {
		case "kvm-clock":
			return "kvm"
		case "hyperv_clocksource_tsc_page":
			return "hyperv"
		}
	}
	// QEMU's "max" model under TCG; under KVM the host's name shows.
	if strings.Contains(cpu.fields["model name"], "QEMU TCG CPU") {
		return "tcg"
	}
	switch {
	case dmiVendor == "QEMU":
		return "unknown (qemu without kvm-clock: tcg, or kvm with kvmclock hidden)"
	case strings.HasPrefix(dmiVendor, "VMware"):
		return "vmware"
	case dmiVendor == "Microsoft Corporation":
		return "hyperv"
	case dmiVendor == "Xen":
		return "xen"
	case cpu.flags == nil:
		return "unknown (no cpuinfo flags, no known clocksource or dmi vendor)"
	}
	return "unknown (hypervisor flag set; vendor not identified)"
}

// cpuidHypervisor reads CPUID leaf 0x40000000 through the cpuid driver, which
// maps the leaf to the file offset; "" when the driver is absent.
func cpuidHypervisor() string {
	f, err := os.Open("/dev/cpu/0/cpuid")
	if err != nil {
		return ""
	}
	defer f.Close()
	var regs [16]byte // eax, ebx, ecx, edx
	if _, err := f.ReadAt(regs[:], 0x40000000); err != nil || binary.LittleEndian.Uint32(regs[0:]) < 0x40000000 {
		return ""
	}
	return string(regs[4:16])
}

// gitCommit describes the checkout the benchmark was built from when the
// Makefile did not stamp Commit.
func gitCommit() string {
	if Commit != "" {
		return Commit
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown (git rev-parse HEAD failed)"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain").Output(); err != nil {
		c += "-unknown-status"
	} else if len(bytes.TrimSpace(st)) > 0 {
		c += "-dirty"
	}
	return c
}
