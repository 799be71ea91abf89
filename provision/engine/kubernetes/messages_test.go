package kubernetes

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/kube"
)

// overlapWriter records whether two Writes ever ran at once: each holds
// the writer a moment, so calls that are not serialized overlap.
type overlapWriter struct {
	busy, overlapped atomic.Bool
	mu               sync.Mutex
	b                strings.Builder
}

func (w *overlapWriter) Write(p []byte) (int, error) {
	if !w.busy.CompareAndSwap(false, true) {
		w.overlapped.Store(true)
	} else {
		defer w.busy.Store(false)
	}
	time.Sleep(20 * time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// The isolation pairs of a round are launched at once (isolate.Run), and
// each launch's delete that fails writes a warning to Options.Messages:
// the engine serializes those writes, so a Messages that is not safe
// for concurrent use (a strings.Builder, a bytes.Buffer) gets whole
// lines, one at a time.
func TestLaunchMessagesSerialized(t *testing.T) {
	t.Parallel()
	// No API server there: every delete fails at once.
	cl, err := kube.New(kube.Config{Server: "https://127.0.0.1:1", Token: "t"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w := &overlapWriter{}
	e := New(Options{Client: cl, Namespace: "default", Messages: w})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { e.deleteLaunch("race", fmt.Sprint(i)) })
	}
	wg.Wait()
	if w.overlapped.Load() {
		t.Error("two launches wrote to Messages at once")
	}
	if n := strings.Count(w.b.String(), "was not all deleted"); n != 8 {
		t.Errorf("%d warnings, want one for each of the 8 launches:\n%s", n, w.b.String())
	}
}
