package verify

import (
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// testKB is the knowledge base of every test, parsed once from the
// embedded tables as the CLI does.
var testKB = func() *kb.KB {
	k, err := kb.Load()
	if err != nil {
		panic(err)
	}
	return k
}()

// expectationWithKB is ExpectationFor(n) with testKB, as the runner sets
// the run's knowledge base.
func expectationWithKB(n *spec.Node) Expectation {
	exp := ExpectationFor(n)
	exp.KB = testKB
	return exp
}
