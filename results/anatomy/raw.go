package anatomy

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// A Block is one translation block as the plugin described it.
type Block struct {
	ID    uint64
	Vaddr uint64
	// Insns are its instructions' bytes, one slice each.
	Insns [][]byte
	// Syms is the symbol table in force when the block first ran in a
	// window: BPF code is loaded and freed over a run, and its addresses
	// are reused.
	Syms *Symbols
}

// A Window is one window the plugin counted: how often each block ran.
type Window struct {
	Seq    int
	Counts []BlockCount
	// Row, Stream, Repeat and Timing come from the guest's log.
	Row, Stream string
	Repeat      uint64
	Timing      string
	// Measured says the window is of the row's measured rounds, not of
	// its warm-up.
	Measured bool
	// Other is how many instructions the plugin left out of the window
	// as another task's or an interrupt handler's (run on another stack).
	Other uint64
}

// BlockCount is how often a block ran in a window.
type BlockCount struct {
	Block *Block
	N     uint64
}

// Raw is a run as the plugin and the guest's log recorded it.
type Raw struct {
	Windows []Window
	// Notes are the plugin's and the log's remarks (X and E lines).
	Notes []string
}

// ReadRaw reads the plugin's output and the guest's log, and the symbols
// of the kernel, its modules and BPF code the log holds.
func ReadRaw(pluginPath, logPath string) (*Raw, error) {
	labels, err := readLog(logPath)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(pluginPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &Raw{Notes: labels.notes}
	if err := r.readPlugin(f, labels); err != nil {
		return nil, fmt.Errorf("%s: %w", pluginPath, err)
	}
	return r, nil
}

// logged is a window as the guest's log names it, and the symbols then.
type logged struct {
	row, stream, timing string
	measured            bool
	repeat              uint64
	syms                *Symbols
}

type guestLog struct {
	windows []logged
	notes   []string
}

// readLog reads the guest's log: C (the kernel's text symbols, gzip'ed
// and base64'ed), S and K (a fresh table of module and BPF image
// symbols), P and F (the BPF programs' functions), W (a window), E (what
// the guest could not read).
func readLog(path string) (*guestLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g := &guestLog{}
	var z strings.Builder
	var core *Symbols
	var images, progs []Symbol
	var cur *Symbols
	measured := map[string]bool{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for s.Scan() {
		line++
		fs := strings.Fields(s.Text())
		if len(fs) == 0 {
			continue
		}
		bad := func() error { return fmt.Errorf("%s:%d: cannot read %q", path, line, s.Text()) }
		switch fs[0] {
		case "C":
			if len(fs) != 2 || core != nil {
				return nil, bad()
			}
			z.WriteString(fs[1])
		case "S":
			images, cur = nil, nil
		case "K":
			if len(fs) != 4 {
				return nil, bad()
			}
			a, err := strconv.ParseUint(fs[1], 16, 64)
			if err != nil {
				return nil, bad()
			}
			images = append(images, Symbol{Addr: a, Name: fs[2], Module: strings.Trim(fs[3], "[]")})
			cur = nil
		case "P":
			progs, cur = nil, nil
		case "F":
			if len(fs) != 4 {
				return nil, bad()
			}
			a, err1 := strconv.ParseUint(fs[1], 16, 64)
			n, err2 := strconv.ParseUint(fs[2], 10, 64)
			if err1 != nil || err2 != nil {
				return nil, bad()
			}
			progs = append(progs, Symbol{Addr: a, Size: n, Name: fs[3], Module: "bpf"})
			cur = nil
		case "W":
			if len(fs) != 5 {
				return nil, bad()
			}
			n, err := strconv.ParseUint(fs[3], 10, 64)
			if err != nil {
				return nil, bad()
			}
			if core == nil {
				if core, err = readKallsyms(z.String()); err != nil {
					return nil, fmt.Errorf("%s:%d: %w", path, line, err)
				}
			}
			if cur == nil {
				cur = core.with(images, progs)
			}
			g.windows = append(g.windows, logged{row: fs[1], stream: fs[2], repeat: n, timing: fs[4], syms: cur, measured: measured[fs[1]]})
		case "M":
			if len(fs) != 2 {
				return nil, bad()
			}
			measured[fs[1]] = true
		case "L":
			g.notes = append(g.notes, "guest: left out "+strings.Join(fs[1:], " ")+" functions (scheduler, interrupts, softirqs)")
		case "E":
			g.notes = append(g.notes, "guest: "+strings.Join(fs[1:], " "))
		default:
			return nil, bad()
		}
	}
	return g, s.Err()
}

// readPlugin reads the plugin's B (block), W (window) and X (remark)
// records and names each window from the log, in order.
func (r *Raw) readPlugin(f io.Reader, g *guestLog) error {
	blocks := map[uint64]*Block{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<22), 1<<22)
	line := 0
	var w *Window
	left := 0
	for s.Scan() {
		line++
		text := s.Text()
		bad := func() error { return fmt.Errorf("line %d: cannot read %.80q", line, text) }
		if left > 0 {
			id, n, ok := strings.Cut(text, " ")
			if !ok {
				return bad()
			}
			bid, err1 := strconv.ParseUint(id, 10, 64)
			cnt, err2 := strconv.ParseUint(n, 10, 64)
			b := blocks[bid]
			if err1 != nil || err2 != nil || b == nil {
				return bad()
			}
			if w != nil {
				if b.Syms == nil {
					b.Syms = w.syms(g)
				}
				w.Counts = append(w.Counts, BlockCount{b, cnt})
			}
			left--
			continue
		}
		fs := strings.Fields(text)
		if len(fs) == 0 {
			continue
		}
		switch fs[0] {
		case "B":
			if len(fs) != 5 {
				return bad()
			}
			id, err1 := strconv.ParseUint(fs[1], 10, 64)
			va, err2 := strconv.ParseUint(fs[2], 16, 64)
			n, err3 := strconv.Atoi(fs[3])
			if err1 != nil || err2 != nil || err3 != nil {
				return bad()
			}
			b := &Block{ID: id, Vaddr: va}
			for h := range strings.SplitSeq(fs[4], ".") {
				code, err := hex.DecodeString(h)
				if err != nil {
					return bad()
				}
				b.Insns = append(b.Insns, code)
			}
			if len(b.Insns) != n {
				return bad()
			}
			blocks[id] = b
		case "W":
			if len(fs) != 4 {
				return bad()
			}
			seq, err1 := strconv.Atoi(fs[1])
			n, err2 := strconv.Atoi(fs[2])
			other, err3 := strconv.ParseUint(fs[3], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil {
				return bad()
			}
			left = n
			w = nil
			// Windows after the guest's last flush (a test's own calls
			// after the last family) are read and dropped.
			if seq < len(g.windows) {
				l := g.windows[seq]
				r.Windows = append(r.Windows, Window{Seq: seq, Row: l.row, Stream: l.stream, Repeat: l.repeat, Timing: l.timing, Measured: l.measured, Other: other})
				w = &r.Windows[len(r.Windows)-1]
			}
		case "X":
			r.Notes = append(r.Notes, "plugin: "+strings.Join(fs[1:], " "))
		default:
			return bad()
		}
	}
	if err := s.Err(); err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("the last window lacks %d blocks: output cut short", left)
	}
	if n := len(r.Windows); n < len(g.windows) {
		return fmt.Errorf("the guest logged %d windows, the plugin counted %d", len(g.windows), n)
	}
	return nil
}

// syms is the symbol table of the window's place in the log.
func (w *Window) syms(g *guestLog) *Symbols { return g.windows[w.Seq].syms }
