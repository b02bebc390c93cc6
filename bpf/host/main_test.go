package host

import "testing"

func TestMain(m *testing.M) { RunTests(m) }
