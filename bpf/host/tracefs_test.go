package host

import (
	"slices"
	"testing"
)

// TestWithTracefs: inside WithTracefs tracefs is reachable; after it, the
// process's mounts are as they were.
func TestWithTracefs(t *testing.T) {
	RequireRoot(t)
	before, err := tracefsMounts()
	if err != nil {
		t.Fatal(err)
	}
	reached := false
	if err := WithTracefs(func() error { reached = tracefsReachable(); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reached {
		t.Error("tracefs was not reachable inside WithTracefs")
	}
	after, err := tracefsMounts()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Errorf("tracefs mounts %v before, %v after", before, after)
	}
}
