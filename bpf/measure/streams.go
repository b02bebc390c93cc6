package measure

import "testing"

// Streams measures streams once a run (OncePinned) for o.Budget(), on a thread pinned
// to o.CPU, in rounds sized by u and o: the front door for streams that
// are not test_run loops (Family's), such as the traffic rigs' frames.
// reset runs once the warm-up is done, after b's timer is reset. The
// Contended says how many of the calls ran on a contended core; the rounds
// returned are those that did not (all of them when too few did not).
func Streams(b *testing.B, o BenchOptions, u CallSizes, reset func(), streams ...Stream) (*Rounds, Contended, error) {
	b.Helper()
	var r *Rounds
	err := o.Clocks.OncePinned(b, o.CPU, func() error {
		var err error
		r, err = run(o.Budget(), o.callSizing(u), func() {
			b.ResetTimer()
			if reset != nil {
				reset()
			}
		}, streams...)
		return err
	})
	if err != nil {
		return nil, Contended{}, err
	}
	u2, l := r.clean(o.Contention.Threshold())
	return u2, l, nil
}
