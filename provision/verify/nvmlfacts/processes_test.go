//go:build cgo

package nvmlfacts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMockProcessesReplay: a simulated node's processes come from the
// replay file under its root and their /proc there, marked modelled; a
// GPU the replay leaves out reports none.
func TestMockProcessesReplay(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(SimProcessesFile, `[{"gpu": 2, "pid": 77}]`)
	write("proc/77/status", "Name:\ttorchrun\nCpus_allowed_list:\t0-55\nMems_allowed_list:\t0\n")
	write("proc/77/environ", "PATH=/bin\x00NCCL_IB_HCA==mlx5_4\x00OTHER=x\x00")
	rep, err := CollectAgent(context.Background(), AgentOptions{Mock: MockDGXH100, SimRoot: root, Collect: Options{Processes: true}})
	if err != nil {
		t.Fatal(err)
	}
	want := &Processes{Modelled: true, List: []Process{{GPU: 2, PID: 77, Name: "torchrun", CPUsAllowed: "0-55", MemsAllowed: "0", Env: map[string]string{"NCCL_IB_HCA": "=mlx5_4"}}}}
	if diff := cmp.Diff(want, rep.Processes); diff != "" {
		t.Errorf("processes (-want +got):\n%s", diff)
	}
	// Not asked: none listed.
	rep, err = CollectAgent(context.Background(), AgentOptions{Mock: MockDGXH100, SimRoot: root})
	if err != nil || rep.Processes != nil {
		t.Errorf("without Processes: %+v %v", rep.Processes, err)
	}
}
