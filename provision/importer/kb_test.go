package importer

import "github.com/gpuform/gpuform/kb"

// testKB is the knowledge base of every test, parsed once from the
// embedded tables as the CLI does.
var testKB = func() *kb.KB {
	k, err := kb.Load()
	if err != nil {
		panic(err)
	}
	return k
}()
