package labels

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"strings"
)

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
