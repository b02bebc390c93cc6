package mark

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Env is the variable that names the file windows are logged to.
const Env = "BPFBENCH_ANATOMY"

// A Log is the run's log of its windows, for the host's anatomy: which
// row, stream and repetition count each window was, and the symbols of
// the code then loaded. The run that is counted owns it (the suite's
// TestMain, FromEnv) and hands it to the engine; a nil *Log logs nothing,
// as in every run the plugin does not count.
type Log struct {
	path    string
	mu      sync.Mutex
	buf     bytes.Buffer
	row     string
	stream  string
	named   map[any]bool
	symRows map[string]bool
}

// New is a log written to path, nil when path is "".
func New(path string) *Log {
	if path == "" {
		return nil
	}
	return &Log{path: path, named: map[any]bool{}, symRows: map[string]bool{}}
}

// FromEnv is the log Env names: nil where the run is not counted.
func FromEnv() *Log { return New(os.Getenv(Env)) }

// Stream names the row and the stream (v, base) whose windows follow.
func (l *Log) Stream(r, s string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.row, l.stream = r, s
}

// Timing says how a loop's repetitions are timed: by the kernel's
// test_run loop, or by a bpf_loop inside the program.
type Timing string

const (
	KernelLoop Timing = "kernel"
	BPFLoop    Timing = "bpf_loop"
)

// Next logs that the next window (Open to Close) runs repeat repetitions
// of the loop key, timed as t. The first window of a loop also logs the
// BPF programs then loaded, and the first of a row the kernel's symbols
// outside its core text (modules, BPF images such as the dispatcher and
// trampolines): the host names the code a window ran from them.
func (l *Log) Next(key any, repeat uint32, t Timing) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.named) == 0 { // the run's first window
		core(&l.buf)
	}
	if !l.symRows[l.row] {
		l.symRows[l.row] = true
		kallsyms(&l.buf)
	}
	if !l.named[key] {
		l.named[key] = true
		programs(&l.buf)
	}
	fmt.Fprintf(&l.buf, "W %s %s %d %s\n", orDash(l.row), orDash(l.stream), repeat, t)
}

// Measured logs that row's warm-up is over: its windows from here on
// are its measured rounds', from which the host makes its anatomy.
func (l *Log) Measured(r string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.buf, "M %s\n", r)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Flush writes the log kept so far and waits until the device has sent
// it (tcdrain where it is a terminal), so that its interrupts land before
// the next window opens.
func (l *Log) Flush() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() == 0 {
		return nil
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("anatomy log: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(l.buf.Bytes()); err != nil {
		return fmt.Errorf("anatomy log: %w", err)
	}
	l.buf.Reset()
	// TCSBRK with a non-zero argument is tcdrain(3).
	if err := unix.IoctlSetInt(int(f.Fd()), unix.TCSBRK, 1); err != nil && !errors.Is(err, unix.ENOTTY) {
		return fmt.Errorf("anatomy log: drain: %w", err)
	}
	return nil
}

// core logs the kernel's text symbols, all of /proc/kallsyms's t and T
// lines, gzip'ed and base64'ed into C lines: Debian ships no System.map,
// and the host needs them to name the code a window ran.
func core(w *bytes.Buffer) {
	data, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		fmt.Fprintf(w, "E kallsyms: %v\n", err)
		return
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	var leave []uint64
	for line := range strings.Lines(string(data)) {
		if fs := strings.Fields(line); len(fs) == 3 && (fs[1] == "t" || fs[1] == "T") {
			io.WriteString(zw, line)
			if left(fs[2]) {
				if a, err := strconv.ParseUint(fs[0], 16, 64); err == nil {
					leave = append(leave, a)
				}
			}
		}
	}
	Leave(leave)
	fmt.Fprintf(w, "L %d\n", len(leave))
	zw.Close()
	enc := base64.StdEncoding.EncodeToString(z.Bytes())
	for len(enc) > 0 {
		n := min(len(enc), 4096)
		fmt.Fprintf(w, "C %s\n", enc[:n])
		enc = enc[n:]
	}
}

// left says the plugin leaves a kernel function out of the windows: the
// scheduler, interrupt handlers and softirqs, which the measured code
// does not call but a timer tick or a waking thread brings into a window
// (docs/icount.md#anatomy).
func left(name string) bool {
	switch name {
	case "__schedule", "common_interrupt", "spurious_interrupt", "handle_softirqs", "__do_softirq":
		return true
	}
	return strings.HasPrefix(name, "sysvec_")
}

// kallsyms logs the symbols of modules and BPF images: the lines of
// /proc/kallsyms with a module name.
func kallsyms(w *bytes.Buffer) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		fmt.Fprintf(w, "E kallsyms: %v\n", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(w, "S\n")
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasSuffix(line, "]") {
			fs := strings.Fields(line)
			if len(fs) == 4 && (fs[1] == "t" || fs[1] == "T") {
				fmt.Fprintf(w, "K %s %s %s\n", fs[0], fs[2], fs[3])
			}
		}
	}
}

// programs logs every loaded BPF program's JIT'd functions, named as
// kallsyms names them (bpf_prog_<tag>_<name>), from the bpf syscall:
// cheaper than reading kallsyms, so it is done for every loop.
func programs(w *bytes.Buffer) {
	fmt.Fprintf(w, "P\n")
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		info, err := p.Info()
		p.Close()
		if err != nil {
			continue
		}
		addrs, ok1 := info.JitedKsymAddrs()
		lens, ok2 := info.JitedFuncLens()
		if !ok1 || !ok2 || len(addrs) != len(lens) {
			continue
		}
		for i, a := range addrs {
			name := fmt.Sprintf("bpf_prog_%s_%s", info.Tag, info.Name)
			if i > 0 {
				name = fmt.Sprintf("bpf_prog_%s_F%d", info.Tag, i)
			}
			fmt.Fprintf(w, "F %x %d %s\n", a, lens[i], name)
		}
	}
}
