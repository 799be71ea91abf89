package facts

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse. Output from a remote host is
// untrusted: Parse must never panic, must fail with one of its sentinel
// errors, and whatever it accepts must serialise and fingerprint.
// Seeds (testdata/fuzz/FuzzParse) include a real probe run over the gh200
// simulated root and truncated copies of it.
func FuzzParse(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("@@gpuform-probe v1 begin n1\n@@n1 end\n"))
	f.Add([]byte(probeOutput(append(minimal(), file("/proc/mounts", "tmpfs /dev/shm tmpfs rw,size=50% 0 0"), end)...)))
	f.Fuzz(func(t *testing.T, out []byte) {
		n, err := Parse(out)
		if err != nil {
			if n != nil {
				t.Fatal("node returned with an error")
			}
			if !errors.Is(err, ErrNotProbeOutput) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrGarbled) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if _, err := json.Marshal(n); err != nil {
			t.Fatalf("accepted facts do not serialise: %v", err)
		}
		if len(n.Fingerprint()) != 64 {
			t.Fatal("bad fingerprint")
		}
	})
}
