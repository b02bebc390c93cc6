package host

import (
	"slices"
	"testing"
)

// TestTracefs: inside a test that asked for it, tracefs is reachable; once
// that test ends, the mounts are as they were.
func TestTracefs(t *testing.T) {
	RequireRoot(t)
	before, err := tracefsMounts()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("mounted", func(t *testing.T) {
		if err := Tracefs(t); err != nil {
			t.Fatal(err)
		}
		if !tracefsReachable() {
			t.Fatal("Tracefs returned, but tracefs is not reachable")
		}
	})
	after, err := tracefsMounts()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Errorf("tracefs mounts %v before, %v after", before, after)
	}
}
