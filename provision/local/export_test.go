package local

// NotRoot makes t behave as if gpuform ran as an ordinary user, so tests
// running as root can exercise the sudo path.
func NotRoot(t *Transport) { t.geteuid = func() int { return 1000 } }
