package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/engine"
	enginekube "github.com/gpuform/gpuform/provision/engine/kubernetes"
	engineslurm "github.com/gpuform/gpuform/provision/engine/slurm"
	"github.com/gpuform/gpuform/provision/kube"
	"github.com/gpuform/gpuform/spec"
)

// kubeClient is the API client of -kubeconfig, else $KUBECONFIG's first
// file, else the pod's service account; each call bounded by
// kubeHealthTimeout.
func kubeClient(s Streams, flag string) (*kube.Client, error) {
	var cfg kube.Config
	var err error
	if path := kube.KubeconfigFromEnv(flag, s.Getenv); path != "" {
		cfg, err = kube.LoadKubeconfig(path)
	} else {
		cfg, err = kube.InCluster(s.Getenv)
	}
	if err != nil {
		return nil, err
	}
	if cfg.Insecure {
		// Never silently: every run says the server is not verified.
		fmt.Fprintf(s.Err, "gpuform: warning: the kubeconfig says insecure-skip-tls-verify: the API server %s's certificate is not verified, so anyone on the path can read this run's credentials and answers.\n", cfg.Server)
	}
	return kube.New(cfg, kubeHealthTimeout)
}

// kubeVerifyEngine is -engine kubernetes: a Job per node in -namespace,
// scoped by -selector and -deadline.
func kubeVerifyEngine(s Streams, a *verifyArguments, cfg *spec.Config, v *verifyView) (engine.Engine, error) {
	cl, err := kubeClient(s, a.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("-engine kubernetes: %w", err)
	}
	ns := a.KubeNamespace
	if ns == "" {
		ns = kube.DefaultNamespace
	}
	o := enginekube.Options{
		Client: cl, Namespace: ns, Selector: a.Engines.Selector,
		StartTimeout: a.Engines.KubeStartTimeout, Messages: v.Messages(),
		Bundle: func(nodes map[string]engineslurm.BundleNode) (*engineslurm.Bundle, error) {
			return engineslurm.NewBundle(cfg, a.Dir, a.Spec.vars, a.Tier, a.Processes, nodes)
		},
	}
	if a.Engines.Deadline > 0 {
		o.Deadline = time.Now().Add(a.Engines.Deadline)
	}
	return enginekube.New(o), nil
}

// runKubeEngineNode is the node side of -engine kubernetes, run by the
// node's Job: verify this node (NODE_NAME) as the bundle says and write
// the report to the ConfigMap -engine-kube-report names, with the pod's
// service account. What keeps the node from verifying is in the report;
// a report that cannot be written is an error on standard error and a
// non-zero exit, which the pod's termination message carries back
// (terminationMessagePolicy FallbackToLogsOnError).
func runKubeEngineNode(ctx context.Context, s Streams, a *verifyArguments) error {
	side, err := enginekube.NodeSideFromEnv(s.Getenv, a.Engines.EngineKubeReport)
	if err != nil {
		return err
	}
	// The key signs this node's report and nothing else needs it: the
	// commands the node side runs (a launch's, the spec's checks) and
	// theirs must not read it, so it leaves the environment they inherit,
	// the process's (os.Environ) and the one passed on (s.Environ).
	if err := os.Unsetenv(enginekube.EnvReportKey); err != nil {
		return fmt.Errorf("-engine-kube-report: %w", err)
	}
	s.Environ = withoutEnv(s.Environ, enginekube.EnvReportKey)
	rep := engineslurm.NodeReport{Node: side.Node}
	hosts, res, err := verifyEngineNode(ctx, s, a, side.Node)
	switch {
	case err != nil:
		rep.Error = err.Error()
	case res != nil:
		// A launcher's: the result of the command it launched.
		rep.NCCL = res
	default:
		rep = engineslurm.NewNodeReport(side.Node, hosts)
	}
	cl, err := kubeClient(s, "")
	if err != nil {
		return fmt.Errorf("-engine-kube-report: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, kubeHealthTimeout)
	defer cancel()
	if err := enginekube.WriteReport(wctx, cl, side, rep); err != nil {
		return fmt.Errorf("-engine-kube-report: the report of node %s was not written: %w", side.Node, err)
	}
	return nil
}

// holdEngineNode is a worker of an -engine kubernetes launch (verify
// --local -engine-hold D): it does nothing but keep its pod, and so the
// GPUs the kubelet gave it, until D has passed or its SIGTERM (the
// launch deleted) cancels ctx; either is its success.
func holdEngineNode(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return nil
}

// withoutEnv is environ without the variable name.
func withoutEnv(environ []string, name string) []string {
	var out []string
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return out
}
