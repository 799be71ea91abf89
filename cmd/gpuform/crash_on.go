//go:build gpuform_crashtest

package main

import "os"

// crashForTest crashes the way GPUFORM_TEST_CRASH says. It is compiled
// only with -tags gpuform_crashtest, so no released binary can be made to
// crash by its environment.
func crashForTest() {
	switch os.Getenv("GPUFORM_TEST_CRASH") {
	case "stack-overflow":
		// A runtime fatal error ("goroutine stack exceeds"), which no
		// recover can catch.
		recurse(0)
	case "goroutine-panic":
		done := make(chan struct{})
		go func() {
			defer close(done)
			panic("gpuform_crashtest: panic in a goroutine")
		}()
		<-done
	}
}

func recurse(n int) int {
	var pad [64]byte
	pad[n%64] = byte(n)
	return recurse(n+1) + int(pad[0])
}
