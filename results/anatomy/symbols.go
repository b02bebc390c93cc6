package anatomy

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A Symbol is a function's start, and its size where known (BPF
// programs); otherwise it runs to the next symbol.
type Symbol struct {
	Addr, Size uint64
	Name       string
	// Module is "" for the kernel's core text, the module's name, or bpf.
	Module string
}

// Symbols is a table of code symbols sorted by address.
type Symbols struct {
	syms   []Symbol
	byName map[string]uint64
}

// readKallsyms reads the kernel's text symbols from the guest's log:
// /proc/kallsyms's text lines, gzip'ed, base64'ed.
func readKallsyms(b64 string) (*Symbols, error) {
	z, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("kernel symbols: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("kernel symbols: %w", err)
	}
	var syms []Symbol
	s := bufio.NewScanner(zr)
	for s.Scan() {
		fs := strings.Fields(s.Text())
		if len(fs) != 3 {
			continue
		}
		a, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("kernel symbols: %q: %w", s.Text(), err)
		}
		syms = append(syms, Symbol{Addr: a, Name: fs[2]})
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("kernel symbols: %w", err)
	}
	if len(syms) == 0 {
		return nil, fmt.Errorf("kernel symbols: none in the log")
	}
	return newSymbols(syms), nil
}

func newSymbols(syms []Symbol) *Symbols {
	slices.SortStableFunc(syms, func(a, b Symbol) int { return cmp.Compare(a.Addr, b.Addr) })
	t := &Symbols{syms: syms, byName: make(map[string]uint64, len(syms))}
	for _, s := range syms {
		if _, ok := t.byName[s.Name]; !ok {
			t.byName[s.Name] = s.Addr
		}
	}
	return t
}

// Lookup is the address of the symbol name.
func (t *Symbols) Lookup(name string) (uint64, bool) {
	a, ok := t.byName[name]
	return a, ok
}

// with is the core table with the module and BPF symbols the guest
// logged.
func (t *Symbols) with(images, progs []Symbol) *Symbols {
	all := make([]Symbol, 0, len(t.syms)+len(images)+len(progs))
	all = append(all, t.syms...)
	all = append(all, images...)
	all = append(all, progs...)
	return newSymbols(all)
}

// search is where addr is or would be in the table, and whether a symbol
// starts there (the first of those that do).
func (t *Symbols) search(addr uint64) (int, bool) {
	return slices.BinarySearchFunc(t.syms, addr, func(s Symbol, a uint64) int { return cmp.Compare(s.Addr, a) })
}

// At is the symbol whose code holds addr, and whether addr is its first
// byte. Outside every symbol (or past a sized symbol's end) it is "?".
func (t *Symbols) At(addr uint64) (Symbol, bool) {
	i, found := t.search(addr)
	if found {
		// Several names at one address: the last is the most specific
		// in System.map's order (a label inside an array, such as
		// __x86_indirect_thunk_rax at __x86_indirect_thunk_array).
		for i+1 < len(t.syms) && t.syms[i+1].Addr == addr {
			i++
		}
		return t.syms[i], true
	}
	if i == 0 {
		return Symbol{Name: "?"}, false
	}
	s := t.syms[i-1]
	if s.Size > 0 && addr >= s.Addr+s.Size {
		return Symbol{Name: "?"}, false
	}
	return s, false
}

// allAt is every symbol that starts at addr.
func (t *Symbols) allAt(addr uint64) []Symbol {
	i, found := t.search(addr)
	if !found {
		return nil
	}
	j := i
	for j < len(t.syms) && t.syms[j].Addr == addr {
		j++
	}
	return t.syms[i:j]
}
