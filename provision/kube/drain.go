package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/health"
)

const (
	// TaintKey is the key of gpuform's NoSchedule taint. A passing
	// health run removes taints of this key and no other.
	TaintKey = "gpuform.dev/unhealthy"
	// TaintEffect is its effect: no new pods; running ones are left to
	// finish (the Slurm drain's meaning).
	TaintEffect = "NoSchedule"
	// ReasonAnnotation on the node is the full reason of gpuform's drain:
	// the check, the catalogue's action and the message.
	ReasonAnnotation = "gpuform.dev/unhealthy-reason"
	// CordonedAnnotation marks a cordon gpuform made ("true"): a passing
	// run uncordons only a node that carries it, so a cordon an admin
	// made before gpuform's is never lifted. One made while gpuform's
	// holds cannot be told from it (a node has one unschedulable field),
	// so it is lifted with gpuform's: an admin keeps a node out across
	// gpuform's runs with a taint of their own, which gpuform never
	// touches (docs/guide/kubernetes.md).
	CordonedAnnotation = "gpuform.dev/cordoned"
	// DrainedAnnotation on the breaker's Lease lists, as a JSON array of
	// node names, the nodes gpuform holds drained.
	DrainedAnnotation = "gpuform.dev/drained"
)

// Breaker is the circuit breaker's Lease and limit.
type Breaker struct {
	// Namespace and Lease name the coordination.k8s.io Lease.
	Namespace, Lease string
	// Fleet is the number of the spec's GPU nodes (health.Limit's size).
	Fleet int
	// MaxDrainedShare is health { max_drained_share }.
	MaxDrainedShare float64
}

// BreakerOpenError is the breaker holding a drain back: Limit of the
// fleet's nodes are held drained by gpuform already.
type BreakerOpenError struct {
	Held         []string
	Limit, Fleet int
	Share        float64
}

func (e *BreakerOpenError) Error() string {
	held := strings.Join(e.Held, ", ")
	if len(e.Held) > 5 {
		held = strings.Join(e.Held[:5], ", ") + fmt.Sprintf(" and %d more", len(e.Held)-5)
	}
	if held == "" {
		held = "none"
	}
	return fmt.Sprintf("gpuform already holds %d of the fleet's %d GPU nodes drained (%s); health { max_drained_share = %g } allows %d: "+
		"this many failing at once points to a common cause (a driver rollout, the fabric, a faulty check) rather than one more broken node; "+
		"find it, let the nodes that are fine pass a health run (or remove them from the Lease's %s annotation), or raise max_drained_share",
		len(e.Held), e.Fleet, held, e.Share, e.Limit, DrainedAnnotation)
}

// casAttempts bounds the compare-and-swap retries of one call: each
// conflict is another node's write landing first, so N nodes at once need
// at most N tries.
const casAttempts = 200

// drained reads the Lease's list.
func drained(l *Lease) ([]string, error) {
	v := l.Metadata.Annotations[DrainedAnnotation]
	if v == "" {
		return nil, nil
	}
	var names []string
	if err := json.Unmarshal([]byte(v), &names); err != nil {
		return nil, fmt.Errorf("the Lease %s/%s's %s annotation is not a JSON list of node names: %v", l.Metadata.Namespace, l.Metadata.Name, DrainedAnnotation, err)
	}
	return names, nil
}

// updateDrained changes the Lease's list with edit (which returns false
// to write nothing) under compare-and-swap, retrying on conflicts.
func (c *Client) updateDrained(ctx context.Context, b Breaker, edit func([]string) ([]string, bool, error)) error {
	for range casAttempts {
		l, err := c.GetLease(ctx, b.Namespace, b.Lease)
		if IsNotFound(err) {
			return fmt.Errorf("circuit breaker: the Lease %s/%s does not exist: create it (gpuform kubernetes manifests writes it): %w", b.Namespace, b.Lease, err)
		}
		if err != nil {
			return fmt.Errorf("circuit breaker: %w", err)
		}
		names, err := drained(l)
		if err != nil {
			return fmt.Errorf("circuit breaker: %w", err)
		}
		next, write, err := edit(names)
		if err != nil || !write {
			return err
		}
		js, _ := json.Marshal(next)
		if l.Metadata.Annotations == nil {
			l.Metadata.Annotations = map[string]string{}
		}
		l.Metadata.Annotations[DrainedAnnotation] = string(js)
		err = c.UpdateLease(ctx, l)
		if IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("circuit breaker: %w", err)
		}
		return nil
	}
	return fmt.Errorf("circuit breaker: the Lease %s/%s changed under %d tries in a row", b.Namespace, b.Lease, casAttempts)
}

// DrainResult says what Drain did.
type DrainResult struct {
	// Already is true when the node carried gpuform's taint before.
	Already bool
	// Cordoned is true when gpuform cordoned it (false: it was cordoned
	// already, by someone else, and stays theirs).
	Cordoned bool
	// Count and Limit are gpuform's drains in the Lease after this one
	// and how many the breaker allows.
	Count, Limit int
}

// Drain takes node out of scheduling for reason (check is the failed
// check's ID, the taint's value): it first takes a place in the
// breaker's Lease (compare-and-swap on its resourceVersion, so N nodes
// failing at once take at most health.Limit places between them; a full
// Lease is a *BreakerOpenError and no drain), then cordons the node
// (marking the cordon as gpuform's unless it was cordoned already) and
// adds the gpuform.dev/unhealthy NoSchedule taint, keeping every other
// taint. A Lease that cannot be read or written is an error and no drain
// (fail closed: the breaker never lets through what it could not count).
func (c *Client) Drain(ctx context.Context, b Breaker, node, check, reason string) (DrainResult, error) {
	var res DrainResult
	n, err := c.GetNode(ctx, node)
	if err != nil {
		return res, err
	}
	res.Already = hasTaint(n)
	limit := health.Limit(b.Fleet, b.MaxDrainedShare)
	res.Limit = limit
	// took is whether this call took the node's place in the Lease (not
	// when it was listed already: a drain that stands).
	took := false
	err = c.updateDrained(ctx, b, func(names []string) ([]string, bool, error) {
		res.Count = len(names)
		took = false
		if slices.Contains(names, node) {
			return nil, false, nil
		}
		if len(names) >= limit {
			return nil, false, &BreakerOpenError{Held: names, Limit: limit, Fleet: b.Fleet, Share: b.MaxDrainedShare}
		}
		res.Count = len(names) + 1
		took = true
		return append(names, node), true, nil
	})
	if err != nil {
		return res, err
	}
	for range casAttempts {
		if n == nil {
			if n, err = c.GetNode(ctx, node); err != nil {
				break
			}
		}
		ann := map[string]*string{ReasonAnnotation: &reason}
		res.Cordoned = false
		if !n.Spec.Unschedulable {
			n.Spec.Unschedulable = true
			yes := "true"
			ann[CordonedAnnotation] = &yes
			res.Cordoned = true
		}
		// A drain that stands keeps its first time: it says how long
		// the node has been out.
		added := time.Now().UTC().Format(time.RFC3339)
		for _, t := range n.Spec.Taints {
			if t.Key == TaintKey && t.TimeAdded != "" {
				added = t.TimeAdded
			}
		}
		taints := slices.DeleteFunc(n.Spec.Taints, func(t Taint) bool { return t.Key == TaintKey })
		n.Spec.Taints = append(taints, Taint{Key: TaintKey, Value: TaintValue(check), Effect: TaintEffect, TimeAdded: added})
		err = c.patchNode(ctx, n, ann)
		if !IsConflict(err) {
			break
		}
		n = nil
	}
	if err != nil && took {
		// The Lease counts a drain that may not have been made: take
		// the place back only when the node is seen without gpuform's
		// taint. A write whose answer was lost may have landed, and a
		// node that cannot be read may be drained: either keeps its
		// place (the Lease over-counts, which holds more drains back,
		// never lets more through). If the give-back fails too, the
		// same. A place this call did not take stays: it is a drain
		// that stands (the node still carries gpuform's taint), and
		// giving it up would let one more drain through the breaker
		// than max_drained_share allows.
		if now, gerr := c.GetNode(ctx, node); gerr == nil && !hasTaint(now) {
			_ = c.updateDrained(ctx, b, withoutNode(node))
		}
	}
	if err != nil {
		return res, err
	}
	return res, nil
}

// LiftResult says what Lift did.
type LiftResult struct {
	// Untainted is true when gpuform's taint was removed.
	Untainted bool
	// Uncordoned is true when gpuform's cordon was lifted.
	Uncordoned bool
	// KeptCordon is true when the node stays cordoned by someone else.
	KeptCordon bool
}

// Lift undoes gpuform's drain of node: it removes the gpuform.dev/unhealthy
// taint, uncordons the node only when gpuform's annotation says gpuform
// cordoned it, and gives up the node's place in the breaker's Lease.
// Every other taint, and a cordon that is not gpuform's, stays.
func (c *Client) Lift(ctx context.Context, b Breaker, node string) (LiftResult, error) {
	var res LiftResult
	var err error
	for range casAttempts {
		var n *Node
		if n, err = c.GetNode(ctx, node); err != nil {
			return res, err
		}
		res = LiftResult{}
		ann := map[string]*string{}
		if hasTaint(n) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t Taint) bool { return t.Key == TaintKey })
			res.Untainted = true
			ann[ReasonAnnotation] = nil
		}
		if n.Metadata.Annotations[CordonedAnnotation] != "" {
			n.Spec.Unschedulable = false
			res.Uncordoned = true
			ann[CordonedAnnotation] = nil
		}
		res.KeptCordon = n.Spec.Unschedulable
		if len(ann) == 0 {
			err = nil
			break
		}
		err = c.patchNode(ctx, n, ann)
		if !IsConflict(err) {
			break
		}
	}
	if err != nil {
		return res, err
	}
	err = c.updateDrained(ctx, b, withoutNode(node))
	return res, err
}

func hasTaint(n *Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t Taint) bool { return t.Key == TaintKey })
}

// TaintValue is a check ID as a taint value: a label value (at most 63 of
// [A-Za-z0-9._-], starting and ending alphanumeric); other characters
// become '_'.
func TaintValue(check string) string {
	b := []byte(check)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-' || ch == '_') {
			b[i] = '_'
		}
	}
	s := string(b)
	if len(s) > 63 {
		s = s[:63]
	}
	s = strings.TrimFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') })
	return s
}

// IsBreakerOpen reports whether err is the breaker holding a drain back.
func IsBreakerOpen(err error) bool {
	var e *BreakerOpenError
	return errors.As(err, &e)
}

// withoutNode is the Lease edit that gives node's place back (no write
// when it has none).
func withoutNode(node string) func([]string) ([]string, bool, error) {
	return func(names []string) ([]string, bool, error) {
		if !slices.Contains(names, node) {
			return nil, false, nil
		}
		return slices.DeleteFunc(names, func(s string) bool { return s == node }), true, nil
	}
}
