package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/provision/kube"
)

// kubernetesManifestsArguments are the arguments of gpuform kubernetes
// manifests.
type kubernetesManifestsArguments struct {
	// Options are -image, -namespace, -spec-configmap and -interval.
	Options kube.ManifestOptions
	// OutPath is -out: the file the manifests go to, "" for standard
	// output.
	OutPath string
	// Engine is -engine: the RBAC of verify -engine kubernetes instead
	// of health mode's manifests.
	Engine bool
}

func (a *kubernetesManifestsArguments) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.Options.Image, "image", "", "the container image with gpuform in it (required)")
	fs.StringVar(&a.Options.Namespace, "namespace", kube.DefaultNamespace, "the namespace of the DaemonSet, its service account and the circuit breaker's Lease")
	fs.StringVar(&a.Options.SpecConfigMap, "spec-configmap", "gpuform-spec", "the ConfigMap holding the spec's files (kubectl create configmap gpuform-spec --from-file=DIR)")
	fs.DurationVar(&a.Options.Interval, "interval", 5*time.Minute, "the wait between health runs on each node")
	fs.StringVar(&a.OutPath, "out", "", "write the manifests to FILE (atomically) instead of standard output")
	fs.BoolVar(&a.Engine, "engine", false, "write the RBAC of verify -engine kubernetes (the controller's and the node Jobs' service accounts, roles and bindings) instead of health mode's manifests")
}

func (a *kubernetesManifestsArguments) finish(fs *pflag.FlagSet, _ []string) error {
	if a.Engine {
		for _, name := range []string{"image", "spec-configmap", "interval"} {
			if fs.Changed(name) {
				return fmt.Errorf("-%s is health mode's; -engine writes RBAC only (the image is the spec's verify { kubernetes { image } })", name)
			}
		}
		return nil
	}
	if a.Options.Image == "" {
		return fmt.Errorf("-image is required: the container image with gpuform in it")
	}
	if a.Options.Interval < 10*time.Second {
		return fmt.Errorf("-interval must be at least 10s")
	}
	return nil
}

func newKubernetesCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubernetes",
		Short: "Kubernetes: health mode's manifests, verify -engine kubernetes's RBAC",
		Args:  cobra.NoArgs,
	}
	a := &kubernetesManifestsArguments{}
	m := &cobra.Command{
		Use:   "manifests",
		Short: "Write the DaemonSet, RBAC and Lease of health mode on Kubernetes",
		Long: `Manifests writes, as one YAML stream for kubectl apply -f -, what health mode
on Kubernetes needs: a Namespace, a ServiceAccount, a ClusterRole of nodes
get and patch (the cordon and the gpuform.dev/unhealthy taint) and its
binding, a Role of leases get and update on the Lease gpuform-breaker alone
and its binding, that Lease (the circuit breaker's count), and a DaemonSet
running "gpuform verify --local -kube-taint" on every GPU node every
-interval, with the spec from the ConfigMap -spec-configmap.

With -engine it writes instead the RBAC of verify -engine kubernetes: the
ServiceAccount gpuform-verify (the controller) with nodes list, and in
-namespace jobs create/list/deletecollection, pods list, secrets
create/deletecollection and configmaps get/deletecollection; the
ServiceAccount gpuform-verify-node (each node's Job) with configmaps create
in -namespace only.

Exit status: 0 written, 1 bad flag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			var b []byte
			var err error
			if a.Engine {
				b, err = kube.EngineManifestsYAML(a.Options.Namespace)
			} else {
				b, err = kube.ManifestsYAML(a.Options)
			}
			if err != nil {
				return err
			}
			if a.OutPath == "" {
				_, err := s.Out.Write(b)
				return err
			}
			if err := writeNewFile(a.OutPath, b); err != nil {
				return fmt.Errorf("-out: %w", err)
			}
			fmt.Fprintf(s.Out, "Kubernetes manifests written to %s.\n", a.OutPath)
			return nil
		},
	}
	a.register(m.Flags())
	cmd.AddCommand(m)
	return cmd
}
