//go:build !gpuform_crashtest

package main

// crashForTest does nothing: the crash triggers exist only in binaries
// built with -tags gpuform_crashtest (crash_on.go), which the
// tests build to check the exit status of a crash.
func crashForTest() {}
