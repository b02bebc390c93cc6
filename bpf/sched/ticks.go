package sched

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUTicks is what /proc/stat says a CPU spent its time on, in USER_HZ
// ticks: softirq work, time its vCPU was stolen by the host, and all of
// it.
type CPUTicks struct{ Softirq, Steal, Total uint64 }

// userHZ is the unit of /proc/stat: USER_HZ, 100 on every Linux ABI.
const userHZ = 100

// TicksDur is a number of /proc/stat ticks as a duration.
func TicksDur(t uint64) time.Duration { return time.Duration(t) * time.Second / userHZ }

// ReadCPUTicks reads every CPU's line of /proc/stat, indexed by CPU.
func ReadCPUTicks() ([]CPUTicks, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []CPUTicks
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || !strings.HasPrefix(fields[0], "cpu") || fields[0] == "cpu" {
			continue
		}
		cpu, err := strconv.Atoi(fields[0][3:])
		if err != nil {
			continue
		}
		var t CPUTicks
		// user nice system idle iowait irq softirq steal (guest time is
		// already in user).
		for i, s := range fields[1:min(9, len(fields))] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/stat %s: %w", fields[0], err)
			}
			t.Total += v
			switch i {
			case 6:
				t.Softirq = v
			case 7:
				t.Steal = v
			}
		}
		for len(out) <= cpu {
			out = append(out, CPUTicks{})
		}
		out[cpu] = t
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("/proc/stat: no per-CPU lines")
	}
	return out, nil
}

// A StealMeter measures the share of a CPU's time its vCPU was stolen by
// the host (the steal column of /proc/stat) while a row measured: time
// the thread clock does not count, during which the host ran something
// else, often on the same core as the vCPU's SMT sibling.
type StealMeter struct {
	cpu    int
	before CPUTicks
	ok     bool
}

// StartSteal starts a StealMeter of cpu (one that knows nothing when
// /proc/stat has no line for it).
func StartSteal(cpu int) StealMeter {
	t, err := ReadCPUTicks()
	if err != nil || cpu < 0 || cpu >= len(t) {
		return StealMeter{}
	}
	return StealMeter{cpu: cpu, before: t[cpu], ok: true}
}

// Ticks is the ticks of the CPU since StartSteal, and how many of them
// the host stole (ok false when unknown).
func (m StealMeter) Ticks() (stolen, total uint64, ok bool) {
	if !m.ok {
		return 0, 0, false
	}
	t, err := ReadCPUTicks()
	if err != nil || m.cpu >= len(t) || t[m.cpu].Total < m.before.Total {
		return 0, 0, false
	}
	return t[m.cpu].Steal - m.before.Steal, t[m.cpu].Total - m.before.Total, true
}

// Frac is the stolen share since StartSteal (ok false when unknown, or
// when no tick passed).
func (m StealMeter) Frac() (float64, bool) {
	var t StealTally
	t.add(m)
	return t.Frac()
}

// A StealTally adds up a CPU's ticks, and how many of them the host
// stole, over several stretches: a row's visits, between which other
// rows measure.
type StealTally struct{ stolen, total uint64 }

// During runs fn and adds cpu's ticks meanwhile.
func (t *StealTally) During(cpu int, fn func() error) error {
	m := StartSteal(cpu)
	err := fn()
	t.add(m)
	return err
}

func (t *StealTally) add(m StealMeter) {
	if stolen, total, ok := m.Ticks(); ok {
		t.stolen += stolen
		t.total += total
	}
}

// Frac is the stolen share of the ticks (ok false when none passed).
func (t *StealTally) Frac() (float64, bool) {
	if t.total == 0 {
		return 0, false
	}
	return float64(t.stolen) / float64(t.total), true
}
