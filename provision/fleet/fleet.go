// Package fleet runs one function per host over many hosts at once, with a
// bound on how many run together, and reports progress as it goes.
//
// It is not where connections are made or facts parsed: the caller's
// function does that for one host (dial, probe, apply). fleet only decides
// when each host starts, keeps one host's failure from stopping the others,
// and tells a Progress what happened.
package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultParallelism is how many hosts run at once when the caller does not
// say (the CLI's -parallelism default). It is what one controller's sshd
// connections and file descriptors comfortably allow; Ansible's default of
// 5 forks is far too few for a GPU fleet and thousands would hit sshd's
// MaxStartups on a shared bastion.
const DefaultParallelism = 32

// Func does the work for one host. The error it returns is that host's
// result; a nil error means the host succeeded.
type Func func(ctx context.Context, host string) error

// NotStartedError is the result of a host that was never started because
// the context ended first.
type NotStartedError struct {
	// Err is the context's error.
	Err error
}

// Error says the host was skipped and why.
func (e *NotStartedError) Error() string {
	return fmt.Sprintf("not started: %v", e.Err)
}

// Unwrap returns the context's error.
func (e *NotStartedError) Unwrap() error { return e.Err }

// Run calls fn for every host, at most parallelism at a time (0 or less
// means DefaultParallelism), and waits for all of them. It returns every
// host's result: nil for success, fn's error otherwise, a *NotStartedError
// for hosts skipped because ctx ended first. Hosts already running when ctx
// ends get ctx too and are expected to stop. A host listed twice runs once.
// progress may be nil.
func Run(ctx context.Context, hosts []string, parallelism int, fn Func, progress Progress) map[string]error {
	if parallelism <= 0 {
		parallelism = DefaultParallelism
	}
	if progress == nil {
		progress = Nop{}
	}
	unique := make([]string, 0, len(hosts))
	seen := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		if !seen[h] {
			seen[h] = true
			unique = append(unique, h)
		}
	}

	results := make(map[string]error, len(unique))
	var mu sync.Mutex
	record := func(host string, err error) {
		mu.Lock()
		results[host] = err
		mu.Unlock()
	}

	progress.Start(len(unique))
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	for i, host := range unique {
		if !acquire(ctx, sem) {
			skip(unique[i:], ctx.Err(), record, progress)
			break
		}
		wg.Add(1)
		progress.HostStarted(host)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			err := fn(ctx, host)
			record(host, err)
			progress.HostDone(host, err, time.Since(start))
		}()
	}
	wg.Wait()
	progress.Finish()
	return results
}

// acquire takes a slot, or reports false when ctx has ended. A slot taken
// just as ctx ends is given back: select picks at random among ready
// cases, and a cancelled run must not start more hosts.
func acquire(ctx context.Context, sem chan struct{}) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case sem <- struct{}{}:
		if ctx.Err() != nil {
			<-sem
			return false
		}
		return true
	case <-ctx.Done():
		return false
	}
}

func skip(hosts []string, cause error, record func(string, error), progress Progress) {
	for _, h := range hosts {
		err := &NotStartedError{Err: cause}
		record(h, err)
		progress.HostDone(h, err, 0)
	}
}
