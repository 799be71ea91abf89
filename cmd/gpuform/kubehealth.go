package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/health"
	"github.com/gpuform/gpuform/provision/kube"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
)

// kubeHealthTimeout bounds health mode's API calls on Kubernetes: an API
// server that does not answer must not hold the DaemonSet's loop.
const kubeHealthTimeout = 30 * time.Second

// kubeHealth is verify --local -kube-taint, health mode on Kubernetes (a
// DaemonSet's pod; node name from NODE_NAME, as the downward API gives
// it). The judgement is health mode's on Slurm (provision/health:
// Decide, Confirm, the sightings state); the drain is a cordon and the
// gpuform.dev/unhealthy NoSchedule taint, behind the circuit breaker
// counted in the Lease gpuform-breaker (provision/kube: Drain, Lift). A
// passing run lifts only gpuform's taint and a cordon gpuform made; an
// admin's cordon and every other taint are never touched. The breaker
// fails closed: a Lease it cannot read or write means no drain and a
// non-zero exit.
func kubeHealth(ctx context.Context, s Streams, a *verifyArguments, w io.Writer, doc *report.Document, node *spec.Node, rerun func(context.Context) *report.Document) error {
	name := s.Getenv("NODE_NAME")
	if name == "" {
		return fmt.Errorf("-kube-taint: NODE_NAME is not set: give the pod env NODE_NAME from fieldRef spec.nodeName (gpuform kubernetes manifests does)")
	}
	cl, err := kubeClient(s, a.Kubeconfig)
	if err != nil {
		return fmt.Errorf("-kube-taint: %w", err)
	}
	p, err := healthPolicy(s, node)
	if err != nil {
		return err
	}
	dec, stateErr := decideHealth(s, doc, p)
	for _, x := range dec.NotApplicable {
		fmt.Fprintf(w, "Kubernetes: node %s: %s.\n", name, x)
	}
	for _, x := range dec.Watching {
		fmt.Fprintf(w, "Kubernetes: watching node %s: %s (drains at %d).\n", name, x, p.DrainAfter)
	}
	if dec.Drain && len(dec.Confirm) > 0 && rerun != nil {
		fmt.Fprintf(w, "Kubernetes: node %s: %s failed; running the checks again in %s before draining.\n", name, dec.Confirm[0].ID, p.ConfirmDelay)
		var runs []string
		if dec, runs, err = health.ConfirmAfter(ctx, dec, p, rerun); err != nil {
			return fmt.Errorf("-kube-taint: %w", err)
		}
		for _, r := range runs {
			fmt.Fprintf(w, "Kubernetes: node %s: %s.\n", name, r)
		}
		if !dec.Drain {
			fmt.Fprintf(w, "Kubernetes: node %s: the failure did not repeat; not drained.\n", name)
		}
	}
	ns := a.KubeNamespace
	if ns == "" {
		ns = kube.DefaultNamespace
	}
	b := kube.Breaker{Namespace: ns, Lease: kube.BreakerLease, Fleet: len(fleetNames(node)), MaxDrainedShare: p.MaxDrainedShare}
	kctx, cancel := context.WithTimeout(ctx, 2*kubeHealthTimeout)
	defer cancel()
	var ret error
	if stateErr != nil {
		ret = exitError{ExitFailed}
	}
	if !dec.Drain {
		res, err := cl.Lift(kctx, b, name)
		if err != nil {
			return fmt.Errorf("-kube-taint: %w", err)
		}
		switch {
		case res.Untainted || res.Uncordoned:
			fmt.Fprintf(w, "Kubernetes: lifted gpuform's drain of node %s (taint %s removed: %t, gpuform's cordon lifted: %t); %s.\n", name, kube.TaintKey, res.Untainted, res.Uncordoned, inServiceNote(doc, dec))
		default:
			fmt.Fprintf(w, "Kubernetes: node %s carries no drain of gpuform's; %s.\n", name, inServiceNote(doc, dec))
		}
		if res.KeptCordon {
			fmt.Fprintf(w, "Kubernetes: node %s stays cordoned: the cordon is not gpuform's; left alone.\n", name)
		}
		return ret
	}
	// The taint's value is the check the reason names first ("nvml.xid",
	// "Xid 13"); the annotation has the whole reason.
	check, _, _ := strings.Cut(dec.Reason, ":")
	text := dec.Reason
	if stateErr != nil {
		text = "[state unusable] " + text
	}
	res, err := cl.Drain(kctx, b, name, check, health.Reason(text))
	if kube.IsBreakerOpen(err) {
		fmt.Fprintf(s.Err, "gpuform: CIRCUIT BREAKER OPEN: not draining node %s (%s): %v.\n", name, text, err)
		return exitError{ExitFailed}
	}
	if err != nil {
		return fmt.Errorf("-kube-taint: %w (node %s not drained)", err, name)
	}
	how := "cordoned and tainted"
	if !res.Cordoned {
		how = "tainted (already cordoned, by someone else: that cordon stays theirs)"
	}
	if res.Already {
		how = "stays drained"
	}
	fmt.Fprintf(w, "Kubernetes: node %s %s: %s=%s:%s, %s (%d of %d allowed in a fleet of %d).\n", name, how, kube.TaintKey, kube.TaintValue(check), kube.TaintEffect, text, res.Count, res.Limit, b.Fleet)
	return ret
}
