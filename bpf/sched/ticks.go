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

// A StealTally adds up a CPU's ticks, and how many of them the host stole
// (the steal column of /proc/stat), over the stretches a row measured
// (its visits, between which other rows measure): time the thread clock
// does not count, during which the host ran something else, often on the
// same core as the vCPU's SMT sibling.
type StealTally struct{ stolen, total uint64 }

// During runs fn and adds cpu's ticks meanwhile (none when /proc/stat has
// no line for it).
func (t *StealTally) During(cpu int, fn func() error) error {
	before, err := ReadCPUTicks()
	ferr := fn()
	after, err2 := ReadCPUTicks()
	if err == nil && err2 == nil && cpu >= 0 && cpu < min(len(before), len(after)) && after[cpu].Total >= before[cpu].Total {
		t.stolen += after[cpu].Steal - before[cpu].Steal
		t.total += after[cpu].Total - before[cpu].Total
	}
	return ferr
}

// Frac is the stolen share of the ticks (ok false when none passed).
func (t *StealTally) Frac() (float64, bool) {
	if t.total == 0 {
		return 0, false
	}
	return float64(t.stolen) / float64(t.total), true
}
