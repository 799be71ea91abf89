package main

import (
	"fmt"
	"sync"

	"github.com/gpuform/gpuform/kb"
)

// KB returns the knowledge base of this run: the embedded tables, parsed
// on the first call (about 14 ms) and shared by every later one, so a
// command that reads no table parses none. Run gives each invocation its
// own loader; Streams built without Run (in-process tests of one
// function) parse on each call.
func (s Streams) KB() (*kb.KB, error) {
	if s.kb == nil {
		return loadKB()
	}
	return s.kb()
}

// newKBLoader returns a loader that parses the embedded tables once.
func newKBLoader() func() (*kb.KB, error) { return sync.OnceValues(loadKB) }

// loadKB parses the embedded tables. They are compiled in and TestLoad
// parses every row, so an error is a bug in this build, said as such.
func loadKB() (*kb.KB, error) {
	k, err := kb.Load()
	if err != nil {
		return nil, fmt.Errorf("gpuform's embedded knowledge base does not parse (a bug in this build): %w", err)
	}
	return k, nil
}
