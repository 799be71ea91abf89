package burnin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
)

func TestRecordScriptsShellcheck(t *testing.T) {
	nodeshtest.Shellcheck(t, map[string]string{
		"record_read.sh":       readScript,
		"record_write.sh":      writeScript,
		"sent/record_read.sh":  nodesh.Script(readScript, []string{Path, "65536"}),
		"sent/record_write.sh": nodesh.Script(writeScript, []string{Path}),
	})
}

// TestRecordOnNode writes and reads the record through the scripts in a
// root (as on a sim:// node): missing, written atomically (no temporary
// file left, mode 0644), read back and judged, and a file over the bound
// read as corrupt rather than as a shorter record.
func TestRecordOnNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	tr := local.New("n", local.WithEnv(map[string]string{"GPUFORM_ROOT": root}))
	if _, found, err := ReadRecord(ctx, tr); err != nil || found {
		t.Fatalf("empty root: found %v, %v", found, err)
	}
	rec := NewRecord(node, t0, t0.Add(4*time.Hour), 4*time.Hour, passed())
	if err := WriteRecord(ctx, tr, rec, false); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, filepath.Dir(Path))
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "burnin.json" {
		t.Errorf("state directory holds %v, want only burnin.json", ents)
	}
	if st, err := os.Stat(filepath.Join(root, Path)); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("record mode: %v %v", st, err)
	}
	data, found, err := ReadRecord(ctx, tr)
	if err != nil || !found {
		t.Fatalf("read: %v %v", found, err)
	}
	if v := Judge(data, found, t0.Add(5*time.Hour), 0, node); !v.OK {
		t.Errorf("written record judged %s: %s", v.Reason, v.Message)
	}
	big := append([]byte(`{"format_version":1,"x":"`), []byte(strings.Repeat("a", 2*MaxRecordBytes))...)
	if err := os.WriteFile(filepath.Join(root, Path), big, 0o644); err != nil {
		t.Fatal(err)
	}
	data, found, err = ReadRecord(ctx, tr)
	if err != nil || !found || len(data) != MaxRecordBytes+1 {
		t.Fatalf("oversized: %d bytes, %v %v", len(data), found, err)
	}
	if v := Judge(data, found, t0, 0, node); v.Reason != ReasonCorrupt {
		t.Errorf("oversized record judged %s", v.Reason)
	}
	if err := os.Remove(filepath.Join(root, Path)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, Path), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadRecord(ctx, tr); err == nil || !strings.Contains(err.Error(), "not a readable file") {
		t.Errorf("a directory at the record's path: %v", err)
	}
}
