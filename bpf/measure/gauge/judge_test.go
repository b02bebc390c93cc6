package gauge

import (
	"math/rand/v2"
	"testing"
)

// calls makes n calls of one stream: a free cost of 100 with a 1% jitter,
// both readings at 1 with a 1% jitter, and then whatever shape does to
// call i.
func calls(n int, shape func(i int, c *Call)) []Call {
	rng := rand.New(rand.NewPCG(1, 2))
	cs := make([]Call, n)
	for i := range cs {
		cs[i] = Call{Cost: 100 * (1 + 0.01*rng.Float64()), Load: Load{1 + 0.01*rng.Float64(), 1 + 0.01*rng.Float64()}}
		shape(i, &cs[i])
	}
	return cs
}

// th is the thresholds a run of such calls has: its free readings plus
// 5%.
var th = Load{1.06, 1.06}

// flagged counts the calls v flags among those pick selects, and those.
func flagged(v Decision, pick func(i int) bool) (n, of int) {
	for i, c := range v.Contended {
		if pick(i) {
			of++
			if c {
				n++
			}
		}
	}
	return n, of
}

// TestJudge: a call is contended when the program ran slower with a
// reference that moved, not when a reference moved alone, nor when the
// program ran slower alone.
func TestJudge(t *testing.T) {
	all := func(int) bool { return true }
	for _, tc := range []struct {
		name  string
		shape func(i int, c *Call)
		// contended says which calls must be flagged; every other call
		// must be kept.
		contended func(i int) bool
		say       [Refs]bool
	}{
		{"free core", func(int, *Call) {}, nil, [Refs]bool{}},
		{"ports move, the program does not", func(i int, c *Call) {
			if i%4 != 0 {
				c.Load[Ports] *= 1.5
			}
		}, nil, [Refs]bool{}},
		{"the program slows, no reference moves", func(i int, c *Call) {
			if (i/100)%3 == 1 {
				c.Cost *= 1.3
			}
		}, nil, [Refs]bool{}},
		{"a neighbour takes the caches in stretches", func(i int, c *Call) {
			if (i/100)%3 == 1 {
				c.Load[Caches] *= 1.2
				c.Cost *= 1.25
			}
		}, func(i int) bool { return (i/100)%3 == 1 }, [Refs]bool{Caches: true}},
		{"the caches move in stretches, slowing half their calls", func(i int, c *Call) {
			if (i/100)%3 == 1 {
				c.Load[Caches] *= 1.2
				if i%2 == 0 {
					c.Cost *= 1.25
				}
			}
		}, func(i int) bool { return (i/100)%3 == 1 && i%2 == 0 }, [Refs]bool{Caches: true}},
		{"four fifths contended, half on each reference", func(i int, c *Call) {
			switch i % 5 {
			case 0, 1:
				c.Load[Caches] *= 1.2
				c.Cost *= 1.25
			case 2, 3:
				c.Load[Ports] *= 1.2
				c.Cost *= 1.25
			}
		}, func(i int) bool { return i%5 < 4 }, [Refs]bool{true, true}},
		{"the ports move with the caches and without the program", func(i int, c *Call) {
			if i%2 == 0 {
				c.Load[Ports] *= 1.5
			}
			if (i/100)%3 == 1 {
				c.Load[Caches] *= 1.2
				c.Load[Ports] *= 1.5
				c.Cost *= 1.25
			}
		}, func(i int) bool { return (i/100)%3 == 1 }, [Refs]bool{Caches: true}},
	} {
		v := judge(calls(3000, tc.shape), th, evidence{})
		if v.Say != tc.say {
			t.Errorf("%s: say %v, want %v", tc.name, v.Say, tc.say)
		}
		want := tc.contended
		if want == nil {
			want = func(int) bool { return false }
		}
		if n, of := flagged(v, want); n != of {
			t.Errorf("%s: %d of %d contended calls flagged, want all", tc.name, n, of)
		}
		if n, _ := flagged(v, func(i int) bool { return !want(i) }); n != 0 {
			t.Errorf("%s: %d free calls flagged, want none", tc.name, n)
		}
		if n, _ := flagged(v, all); v.Unjudged != 0 {
			t.Errorf("%s: %d of %d flagged calls unjudged, want none", tc.name, v.Unjudged, n)
		}
	}
}

// TestJudgeStreams: each stream is compared with its own free cost, and
// calls on a stream the judge cannot tell count as contended only where a
// reference with a say moved, from the run's earlier rows.
func TestJudgeStreams(t *testing.T) {
	contended := func(i int) bool { return (i/50)%3 == 1 }
	row := calls(600, func(i int, c *Call) {
		c.Stream = i % 2
		if c.Stream == 1 {
			c.Cost *= 3 // a dearer program, slower than the first even when free
		}
		if contended(i) {
			c.Load[Caches] *= 1.2
			c.Cost *= 1.25
		}
	})
	v := judge(row, th, evidence{})
	if n, of := flagged(v, contended); n != of || !v.Say[Caches] {
		t.Fatalf("two streams: %d of %d contended calls flagged, say %v; want all, the caches", n, of, v.Say)
	}
	if n, _ := flagged(v, func(i int) bool { return !contended(i) }); n != 0 {
		t.Errorf("two streams: %d free calls flagged (the dearer stream's?), want none", n)
	}
	// A short row, contended but for 5 calls: no free cost to judge from.
	short := calls(60, func(i int, c *Call) {
		if i >= 5 {
			c.Load[Caches] *= 1.2
			c.Cost *= 1.25
		}
	})
	if v := judge(short, th, evidence{}); v.Say[Caches] {
		t.Errorf("a short row alone gave the caches a say")
	} else if n, _ := flagged(v, func(int) bool { return true }); n != 0 {
		t.Errorf("a short row alone: %d calls flagged, want none", n)
	}
	// The run's earlier row showed the caches predict the cost.
	v = judge(short, th, v.shown)
	if n, of := flagged(v, func(i int) bool { return i >= 5 }); n != of || v.Unjudged != of {
		t.Errorf("after a row that gave the caches a say: %d of %d moved calls flagged, %d unjudged", n, of, v.Unjudged)
	}
	if n, _ := flagged(v, func(i int) bool { return i < 5 }); n != 0 {
		t.Errorf("after a row that gave the caches a say: %d free calls flagged", n)
	}
}

// TestContentionJudge: a nil record flags nothing; Keep carries a row's
// evidence to the next; a reference without a threshold has no say.
func TestContentionJudge(t *testing.T) {
	var none *Contention
	if v := none.Judge(make([]Call, 3)); len(v.Contended) != 3 || v.Say != ([Refs]bool{}) {
		t.Errorf("nil Contention: %v", v)
	}
	none.Keep(Decision{})
	c := new(Contention)
	row := calls(600, func(i int, c *Call) {
		if (i/50)%3 == 1 {
			c.Load[Caches] *= 1.2
			c.Cost *= 1.25
		}
	})
	if v := c.Judge(row); v.Say != ([Refs]bool{}) {
		t.Errorf("no readings recorded, no thresholds: say %v", v.Say)
	}
	for _, call := range row {
		c.Add(call.Load)
	}
	v := c.Judge(row)
	if !v.Say[Caches] || v.Say[Ports] {
		t.Fatalf("say %v, want the caches'", v.Say)
	}
	c.Keep(v)
	if c.run.moved[Caches].movedSlow == 0 {
		t.Errorf("Keep recorded nothing: %+v", c.run)
	}
}
