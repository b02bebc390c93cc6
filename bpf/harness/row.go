package harness

import (
	"errors"
	"fmt"
	"testing"

	"bpfbench/bpf/measure"
)

// SetupRow sets up the row name of the family benchmark b with setup,
// which may use the testing.TB it is given as a row's own sub-benchmark
// would: its Skip and Fatal end the setup and become the row's Skip and
// Err (measure.Row), reported in the row's sub-benchmark, and its
// Cleanups are the family's, so that what it attaches stays attached
// while the family measures its rows together.
func SetupRow(b *testing.B, name string, setup func(tb testing.TB) measure.Row) (row measure.Row) {
	b.Helper()
	tb := &rowTB{TB: b, name: b.Name() + "/" + name}
	defer func() {
		tb.done = true
		if v := recover(); v != nil {
			if _, ok := v.(rowStop); !ok {
				panic(v)
			}
		}
		switch {
		case tb.err != nil:
			row = measure.Row{Err: tb.err}
		case tb.skip != "":
			row = measure.Row{Skip: tb.skip}
		}
		row.Name = name
	}()
	return setup(tb)
}

// rowTB is the testing.TB of a row's setup (SetupRow). Once the setup is
// done, what its cleanups report goes to the family's benchmark.
type rowTB struct {
	testing.TB
	name string
	skip string
	err  error
	done bool
}

// rowStop ends a row's setup at a Skip or a Fatal.
type rowStop struct{}

func (t *rowTB) Name() string  { return t.name }
func (t *rowTB) Failed() bool  { return t.err != nil || (t.done && t.TB.Failed()) }
func (t *rowTB) Skipped() bool { return t.skip != "" }

func (t *rowTB) Fail() {
	if t.done {
		t.TB.Fail()
		return
	}
	if t.err == nil {
		t.err = errors.New("failed")
	}
}

func (t *rowTB) Error(args ...any) {
	if t.done {
		t.TB.Error(args...)
		return
	}
	t.err = errors.Join(t.err, errors.New(fmt.Sprint(args...)))
}

func (t *rowTB) Errorf(format string, args ...any) { t.Error(fmt.Sprintf(format, args...)) }

func (t *rowTB) FailNow() {
	if t.done {
		t.TB.FailNow()
	}
	t.Fail()
	panic(rowStop{})
}

func (t *rowTB) Fatal(args ...any) {
	t.Error(args...)
	t.FailNow()
}

func (t *rowTB) Fatalf(format string, args ...any) { t.Fatal(fmt.Sprintf(format, args...)) }

func (t *rowTB) SkipNow() { t.Skip("skipped") }

func (t *rowTB) Skip(args ...any) {
	if t.done {
		t.TB.Skip(args...)
	}
	t.skip = fmt.Sprint(args...)
	panic(rowStop{})
}

func (t *rowTB) Skipf(format string, args ...any) { t.Skip(fmt.Sprintf(format, args...)) }

// A ScopedTB runs the cleanups registered through it at End, not when
// the test ends: host.SetSysctl for the length of a function.
type ScopedTB struct {
	testing.TB
	cleanups []func()
}

func (s *ScopedTB) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

// End runs the cleanups, the last registered first.
func (s *ScopedTB) End() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}
