package labels

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// The kCFI kernel pair of tools/kcfi (Debian's linux-source-6.12, clang 19,
// CONFIG_CFI_CLANG=y and =n, nothing else different) booted by tools/vmexec
// under QEMU/TCG (-cpu max: no IBT), as captured in testdata/cfi (see its
// README.md): each machine with the label it must get from its config, and
// from /proc/kallsyms alone, as on a kernel whose config cannot be read.
var cfiFixtures = []struct {
	dir      string
	want     string // from the config
	wantSyms string // from kallsyms, without the config
	syms     kallsyms
}{
	// "SMP alternatives: Using kCFI": FineIBT is built in, but auto mode
	// needs a CPU with IBT.
	{"qemu-tcg-6.12-kcfi", "kcfi", "kcfi", kallsyms{cfi: true, fineIBT: true}},
	// The same image with cfi=off: "SMP alternatives: Disabling CFI".
	{"qemu-tcg-6.12-kcfi-cfi-off", "off", "off", kallsyms{cfi: true, fineIBT: true}},
	// With cfi=fineibt: "SMP alternatives: Using FineIBT CFI", without IBT.
	{"qemu-tcg-6.12-kcfi-cfi-fineibt", "fineibt", "fineibt", kallsyms{cfi: true, fineIBT: true}},
	// CONFIG_CFI_CLANG=n: __pfx_ symbols in the padding, no __cfi_.
	{"qemu-tcg-6.12-nocfi", "off", "off (no __cfi_ symbols)", kallsyms{}},
}

func labelValue(t *testing.T, ls []Label, key string) string {
	t.Helper()
	for _, l := range ls {
		if l.Key == key {
			return l.Value
		}
	}
	t.Fatalf("no %s label", key)
	return ""
}

// withoutConfig hides /proc/config.gz and /boot from s.
func withoutConfig(s source) source {
	read := s.readFile
	s.readFile = func(path string) ([]byte, error) {
		if path == "/proc/config.gz" || strings.HasPrefix(path, "/boot/") {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
		}
		return read(path)
	}
	return s
}

func TestCFIPairFixtures(t *testing.T) {
	for _, c := range cfiFixtures {
		t.Run(c.dir, func(t *testing.T) {
			s := fixtureSource(filepath.Join("testdata/cfi", c.dir))
			release, ok := s.read("/proc/sys/kernel/osrelease")
			if !ok {
				t.Fatalf("osrelease: %s", release)
			}
			if cfg := s.kernelConfig(release, true); !cfg.known() {
				t.Fatalf("config not read: %s", cfg.why)
			}
			ls := labelsFrom(s)
			if got := labelValue(t, ls, "kernel"); got != release {
				t.Errorf("kernel = %q, want %q", got, release)
			}
			if got := labelValue(t, ls, "cfi"); got != c.want {
				t.Errorf("cfi = %q, want %q", got, c.want)
			}
			if got := labelValue(t, ls, "ibt"); got != "off (cpu lacks ibt)" {
				t.Errorf("ibt = %q, want off (cpu lacks ibt)", got)
			}

			if got := s.kallsyms(); got != c.syms {
				t.Errorf("kallsyms = %+v, want %+v", got, c.syms)
			}
			if got := labelValue(t, labelsFrom(withoutConfig(s)), "cfi"); got != c.wantSyms {
				t.Errorf("without the config: cfi = %q, want %q", got, c.wantSyms)
			}
		})
	}
}

// TestCFIPairConfigs checks that the fixtures' configs (cut to the CFI,
// IBT and padding options) differ where tools/kcfi lets the pair differ.
func TestCFIPairConfigs(t *testing.T) {
	read := func(dir, rel string) map[string]string {
		b, err := fixtureSource(filepath.Join("testdata/cfi", dir)).readFile("/boot/config-" + rel)
		if err != nil {
			t.Fatal(err)
		}
		return parseConfig(b)
	}
	kcfi := read("qemu-tcg-6.12-kcfi", "6.12.117-bpfbench-kcfi")
	nocfi := read("qemu-tcg-6.12-nocfi", "6.12.117-bpfbench-nocfi")
	want := map[string][2]string{ // option: nocfi, kcfi ("" is absent)
		"CONFIG_CFI_CLANG":                    {"n", "y"},
		"CONFIG_CFI_PERMISSIVE":               {"", "n"},
		"CONFIG_CFI_ICALL_NORMALIZE_INTEGERS": {"", "n"},
		"CONFIG_CFI_AUTO_DEFAULT":             {"", "y"},
		"CONFIG_FINEIBT":                      {"", "y"},
		"CONFIG_ARCH_USES_CFI_TRAPS":          {"", "y"},
		"CONFIG_PREFIX_SYMBOLS":               {"y", ""},
		"CONFIG_FUNCTION_PADDING_BYTES":       {"16", "11"},
	}
	keys := map[string]bool{}
	for k := range kcfi {
		keys[k] = true
	}
	for k := range nocfi {
		keys[k] = true
	}
	for k := range keys {
		got := [2]string{nocfi[k], kcfi[k]}
		w, listed := want[k]
		if !listed {
			w = [2]string{got[0], got[0]}
		}
		if got != w {
			t.Errorf("%s: nocfi %q, kcfi %q; want %q, %q", k, got[0], got[1], w[0], w[1])
		}
	}
}
