package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// TestImageFileContentCheck judges an image file's content at the full
// tier: the recorded sha256 passes, another fails naming the file, a hash
// that could not be computed and a ledger entry without a hash are errors;
// below the full tier the file passes on its identity and observed says
// the content was not hashed.
func TestImageFileContentCheck(t *testing.T) {
	const ref = "nvcr.io/nvidia/pytorch:25.02-py3"
	pinned := "sha256:" + strings.Repeat("a", 64)
	recorded, other := strings.Repeat("c", 64), strings.Repeat("d", 64)
	n := &spec.Node{Name: "n", Container: &spec.Container{
		Runtime:  spec.Attr[string]{V: "enroot", Set: true},
		ImageDir: spec.Attr[string]{V: "/raid/containers", Set: true},
		Images:   []spec.Attr[string]{{V: ref, Set: true}},
		Pins:     map[string]spec.ImagePin{ref: {Digest: pinned}},
	}}
	file := "/raid/containers/" + facts.ImageFileName("nvcr.io/nvidia/pytorch", pinned, "enroot")
	node := func(hash string) *facts.Node {
		return &facts.Node{Images: map[string]*facts.ImageStore{"enroot": {Images: []facts.LocalImage{{
			ID: file, Tags: []string{ref}, Digests: []string{"nvcr.io/nvidia/pytorch@" + pinned}, ContentSHA256: hash,
		}}}}}
	}
	cases := map[string]struct {
		f        *facts.Node
		content  map[string]ImageContent
		status   Status
		observed string
		msg      string
	}{
		"below full":    {node(recorded), nil, StatusPass, pinned + " (name and identity only: content not hashed at this tier", ""},
		"as pulled":     {node(recorded), map[string]ImageContent{file: {SHA256: recorded}}, StatusPass, pinned + " (content sha256:" + recorded + ", as pulled)", ""},
		"rewritten":     {node(recorded), map[string]ImageContent{file: {SHA256: other}}, StatusFail, "content sha256:" + other, file + " changed since gpuform pulled it"},
		"timeout":       {node(recorded), map[string]ImageContent{file: {Error: "sha256sum of " + file + " did not finish within 5m0s"}}, StatusError, pinned, "did not finish within"},
		"not hashed":    {node(recorded), map[string]ImageContent{}, StatusError, pinned, "was not hashed"},
		"no hash":       {node(""), map[string]ImageContent{file: {SHA256: other}}, StatusError, pinned, "no recorded content hash: re-pull with gpuform apply"},
		"no hash below": {node(""), nil, StatusPass, pinned + " (name and identity only", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := checkImageDigests(Expectation{KB: testKB, Spec: n}, tc.f, tc.content)
			if len(got) != 1 {
				t.Fatalf("%d results: %+v", len(got), got)
			}
			r := got[0]
			if r.Status != tc.status || !strings.HasPrefix(r.Observed, tc.observed) || !strings.Contains(r.Message, tc.msg) {
				t.Errorf("%+v", r)
			}
		})
	}
}

// answerTransport answers every command with res, or blocks until the
// context ends when block is set.
type answerTransport struct {
	transport.Transport
	res   transport.Result
	block bool
	saw   []string
}

func (a *answerTransport) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	a.saw = append(a.saw, cmd.Script)
	if a.block {
		<-ctx.Done()
		return transport.Result{}, ctx.Err()
	}
	return a.res, nil
}

// TestHashFileBounded: sha256sum runs under timeout on the node, and the
// controller's own limit ends a node that does not answer; either is an
// error, never a digest.
func TestHashFileBounded(t *testing.T) {
	const file = "/raid/containers/x.sqsh"
	for name, tc := range map[string]struct {
		tr   *answerTransport
		want ImageContent
	}{
		"digest":    {&answerTransport{res: transport.Result{Stdout: []byte(strings.Repeat("e", 64) + "  " + file + "\n")}}, ImageContent{SHA256: strings.Repeat("e", 64)}},
		"timed out": {&answerTransport{res: transport.Result{ExitCode: 124}}, ImageContent{Error: "sha256sum of " + file + " did not finish within 1s"}},
		"hangs":     {&answerTransport{block: true}, ImageContent{Error: "sha256sum of " + file + " did not finish within 1s"}},
		"garbage":   {&answerTransport{res: transport.Result{Stdout: []byte("ok\n")}}, ImageContent{Error: "sha256sum of " + file + " printed no digest"}},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if got := hashFile(ctx, tc.tr, file, "", false, time.Second); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			// scripts/hash_file.sh, which runs sha256sum under timeout -k 5
			// SECONDS, with the file and the limit in whole seconds.
			if len(tc.tr.saw) != 1 || !strings.HasSuffix(tc.tr.saw[0], nodesh.Args(file, "1")+hashFileScript) {
				t.Errorf("script:\n%s", tc.tr.saw)
			}
		})
	}
}

// TestHashFileScriptUnderEachShell runs hash_file.sh under dash, bash and
// busybox ash on a scratch root: a file's digest, and exit 3 with the
// reason for a directory and for a path that does not resolve.
func TestHashFileScriptUnderEachShell(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "raid/containers/dir.sqsh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "raid/containers/x.sqsh"), []byte("squashfs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("squashfs\n"))
	for _, sh := range nodeshtest.Shells() {
		for _, tc := range []struct {
			file, stdout, stderr string
			exit                 int
		}{
			{"/raid/containers/x.sqsh", hex.EncodeToString(sum[:]) + "  " + root + "/raid/containers/x.sqsh\n", "", 0},
			{"/raid/containers/dir.sqsh", "", "not a regular file\n", 3},
		} {
			t.Run(sh.Name+tc.file, func(t *testing.T) {
				cmd := nodeshtest.Command(t, sh, nodesh.Script(hashFileScript, []string{tc.file, "5"}, facts.Resolver))
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GPUFORM_ROOT=" + root}
				var stdout, stderr strings.Builder
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				exit := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					exit = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if exit != tc.exit || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
					t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", exit, stdout.String(), stderr.String(), tc.exit, tc.stdout, tc.stderr)
				}
			})
		}
	}
}
