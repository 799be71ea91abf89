package slurm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A round of pairs travels as one argument of both its steps and comes
// back the same on every node; what would not is refused on either side.
func TestPairRound(t *testing.T) {
	t.Parallel()
	ends := map[string]RoundEnd{
		"gpu008": {NIC: "mlx5_0", Port: 18601},
		"gpu009": {NIC: "mlx5_0", Port: 18601, Server: "gpu008"},
		"gpu010": {NIC: "mlx5_1", Port: 18602},
		"gpu011": {NIC: "mlx5_1", Port: 18602, Server: "gpu010"},
	}
	s, err := FormatPairRound(ends)
	if err != nil {
		t.Fatal(err)
	}
	if want := "gpu008:mlx5_0:18601,gpu009:mlx5_0:18601:gpu008,gpu010:mlx5_1:18602,gpu011:mlx5_1:18602:gpu010"; s != want {
		t.Errorf("FormatPairRound = %q, want %q", s, want)
	}
	back, err := ParsePairRound(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ends, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := FormatPairRound(map[string]RoundEnd{"gpu008": {NIC: "mlx5_0,x", Port: 1}}); err == nil {
		t.Error("a NIC name with a comma travelled")
	}
	for _, bad := range []string{"", "gpu008", "gpu008:mlx5_0", "gpu008:mlx5_0:0", "gpu008:mlx5_0:x", "gpu008:mlx5_0:70000", "gpu008:mlx5_0:1:", "gpu008:mlx5_0:1:a:b", ":mlx5_0:1"} {
		if _, err := ParsePairRound(bad); err == nil || !strings.Contains(err.Error(), "-engine-pair") {
			t.Errorf("ParsePairRound(%q) = %v, want an error", bad, err)
		}
	}
}
