package lazyre

import (
	"sync"
	"testing"
)

func TestCompilesOnceOnFirstUse(t *testing.T) {
	t.Parallel()
	r := New(`^([a-z]+)-([0-9]+)$`)
	if r.re != nil {
		t.Fatal("New compiled the pattern: it must wait for the first use")
	}
	if got := r.String(); got != `^([a-z]+)-([0-9]+)$` {
		t.Errorf("String() = %q", got)
	}
	if r.re != nil {
		t.Fatal("String compiled the pattern")
	}
	var wg sync.WaitGroup
	seen := make([]any, 8)
	for i := range seen {
		wg.Go(func() { seen[i] = r.Get() })
	}
	wg.Wait()
	for i, p := range seen {
		if p != seen[0] {
			t.Errorf("goroutine %d got a different compiled expression", i)
		}
	}
	if m := r.FindStringSubmatch("sm-90"); len(m) != 3 || m[1] != "sm" || m[2] != "90" {
		t.Errorf("FindStringSubmatch = %q", m)
	}
	if r.MatchString("SM-90") {
		t.Error("MatchString matched an upper-case name")
	}
}

func TestInvalidPatternPanicsOnFirstUse(t *testing.T) {
	t.Parallel()
	r := New(`(`) // constructing it must not panic
	defer func() {
		if recover() == nil {
			t.Error("Get of an invalid pattern did not panic")
		}
	}()
	r.Get()
}
