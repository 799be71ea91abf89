package facts

import (
	"fmt"

	"github.com/gpuform/gpuform/internal/readlimit"
)

// MaxOutput bounds the probe output Parse accepts. A real node's facts are
// tens of kilobytes; a compromised or broken node that prints gigabytes
// must not make the controller parse them.
const MaxOutput = 64 << 20

// checkOutputSize refuses probe output over MaxOutput.
func checkOutputSize(output []byte) error {
	if len(output) > MaxOutput {
		return fmt.Errorf("%w: probe output of %d bytes exceeds the limit of %s", ErrGarbled, len(output), readlimit.FormatSize(MaxOutput))
	}
	return nil
}
