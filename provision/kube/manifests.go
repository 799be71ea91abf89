package kube

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ManifestOptions shape health mode's manifests.
type ManifestOptions struct {
	// Namespace holds the DaemonSet, its service account and the
	// breaker's Lease (default gpuform-system).
	Namespace string
	// Image is the container image with gpuform in it.
	Image string
	// SpecConfigMap is the ConfigMap holding the spec's files, mounted
	// at /etc/gpuform/spec (default gpuform-spec).
	SpecConfigMap string
	// Interval is the wait between health runs (default 5m).
	Interval time.Duration
	// NodeSelector picks the GPU nodes (default
	// nvidia.com/gpu.present=true, GPU feature discovery's label).
	NodeSelector map[string]string
}

// Names of health mode's objects.
const (
	DefaultNamespace = "gpuform-system"
	ServiceAccount   = "gpuform-health"
	BreakerLease     = "gpuform-breaker"
	// SpecMount is where the DaemonSet mounts the spec's ConfigMap.
	SpecMount = "/etc/gpuform/spec"
	// HostRootMount is where health mode's DaemonSet and verify -engine
	// kubernetes's Jobs mount the node's root filesystem, read-only:
	// verify --local -host-root reads the node's packages and /etc
	// there, not the image's.
	HostRootMount = "/host"
)

// HostRootVolume is the node's / as a hostPath volume named host-root.
func HostRootVolume() map[string]any {
	return map[string]any{"name": "host-root", "hostPath": map[string]any{"path": "/", "type": "Directory"}}
}

// HostRootVolumeMount mounts HostRootVolume at HostRootMount, read-only
// and, where the container runtime can, recursively so (the node's /proc,
// /sys and /run under it too). No mount propagation: mounts the node makes
// later are not needed, a read of the node's files is.
func HostRootVolumeMount() map[string]any {
	return map[string]any{"name": "host-root", "mountPath": HostRootMount, "readOnly": true, "recursiveReadOnly": "IfPossible"}
}

func (o *ManifestOptions) defaults() {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.SpecConfigMap == "" {
		o.SpecConfigMap = "gpuform-spec"
	}
	if o.Interval <= 0 {
		o.Interval = 5 * time.Minute
	}
	if o.NodeSelector == nil {
		o.NodeSelector = map[string]string{"nvidia.com/gpu.present": "true"}
	}
}

type obj = map[string]any

// Manifests returns health mode's objects, in the order to create them:
// the Namespace, the ServiceAccount, a ClusterRole of nodes get and patch
// (cordon and taint the node it runs on; Kubernetes RBAC cannot narrow a
// verb to the caller's own node) and its binding, a Role of leases get
// and update on the breaker's Lease alone (by resourceNames) and its
// binding, the Lease itself (so the role needs no create), and the
// DaemonSet.
func Manifests(o ManifestOptions) ([]map[string]any, error) {
	o.defaults()
	if o.Image == "" {
		return nil, fmt.Errorf("the image with gpuform in it is required (-image)")
	}
	ns := o.Namespace
	meta := func(name string, namespaced bool) obj {
		m := obj{"name": name, "labels": obj{"app.kubernetes.io/name": "gpuform-health", "app.kubernetes.io/part-of": "gpuform"}}
		if namespaced {
			m["namespace"] = ns
		}
		return m
	}
	subject := []any{obj{"kind": "ServiceAccount", "name": ServiceAccount, "namespace": ns}}
	sel := obj{}
	for k, v := range o.NodeSelector {
		sel[k] = v
	}
	script := fmt.Sprintf(`while :; do gpuform verify --local -kube-taint -namespace %s -host-root %s %s; sleep %d; done`, ns, HostRootMount, SpecMount, int(o.Interval.Seconds()))
	ds := obj{
		"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("gpuform-health", true),
		"spec": obj{
			"selector":       obj{"matchLabels": obj{"app.kubernetes.io/name": "gpuform-health"}},
			"updateStrategy": obj{"type": "RollingUpdate", "rollingUpdate": obj{"maxUnavailable": "10%"}},
			"template": obj{
				"metadata": obj{"labels": obj{"app.kubernetes.io/name": "gpuform-health", "app.kubernetes.io/part-of": "gpuform"}},
				"spec": obj{
					"serviceAccountName": ServiceAccount,
					"nodeSelector":       sel,
					// gpuform's own taint must not keep the health check
					// off the node it would lift it from.
					"tolerations": []any{
						obj{"key": TaintKey, "operator": "Exists", "effect": TaintEffect},
						obj{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
					},
					"priorityClassName": "system-node-critical",
					"containers": []any{obj{
						"name":    "health",
						"image":   o.Image,
						"command": []any{"/bin/sh", "-c", script},
						"env": []any{
							obj{"name": "NODE_NAME", "valueFrom": obj{"fieldRef": obj{"fieldPath": "spec.nodeName"}}},
							// The NVIDIA container runtime mounts every GPU
							// and the driver's libraries (NVML).
							obj{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
							obj{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility,compute"},
						},
						"securityContext": obj{
							// /dev/kmsg (Xids) and the GPUs' device files
							// need it; nothing else is mounted writable but
							// the sightings state.
							"privileged": true,
						},
						"resources": obj{"requests": obj{"cpu": "50m", "memory": "64Mi"}, "limits": obj{"memory": "512Mi"}},
						"volumeMounts": []any{
							obj{"name": "spec", "mountPath": SpecMount, "readOnly": true},
							obj{"name": "kmsg", "mountPath": "/dev/kmsg", "readOnly": true},
							obj{"name": "state", "mountPath": "/var/lib/gpuform"},
							// The node's files (packages, /etc), read-only:
							// the spec.* checks judge the node, not the image.
							HostRootVolumeMount(),
						},
					}},
					"volumes": []any{
						obj{"name": "spec", "configMap": obj{"name": o.SpecConfigMap}},
						obj{"name": "kmsg", "hostPath": obj{"path": "/dev/kmsg", "type": "CharDevice"}},
						obj{"name": "state", "hostPath": obj{"path": "/var/lib/gpuform", "type": "DirectoryOrCreate"}},
						HostRootVolume(),
					},
				},
			},
		},
	}
	return []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns, false)},
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(ServiceAccount, true)},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta("gpuform-health", false),
			"rules": []any{obj{"apiGroups": []any{""}, "resources": []any{"nodes"}, "verbs": []any{"get", "patch"}}}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta("gpuform-health", false),
			"roleRef":  obj{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gpuform-health"},
			"subjects": subject},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta("gpuform-health", true),
			"rules": []any{obj{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "resourceNames": []any{BreakerLease}, "verbs": []any{"get", "update"}}}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("gpuform-health", true),
			"roleRef":  obj{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gpuform-health"},
			"subjects": subject},
		{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta(BreakerLease, true), "spec": obj{}},
		ds,
	}, nil
}

// ManifestsYAML is Manifests as one YAML stream (kubectl apply -f -).
func ManifestsYAML(o ManifestOptions) ([]byte, error) {
	objs, err := Manifests(o)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# gpuform health mode on Kubernetes: verify --local -kube-taint on every GPU node.\n")
	b.WriteString("# Written by gpuform kubernetes manifests; the spec goes in ConfigMap " + strconv.Quote(o.SpecConfigMapOrDefault()) + ".\n")
	return yamlDocuments(&b, objs)
}

// SpecConfigMapOrDefault is the spec ConfigMap's name.
func (o ManifestOptions) SpecConfigMapOrDefault() string {
	o.defaults()
	return o.SpecConfigMap
}

// Names of verify -engine kubernetes's identities.
const (
	// EngineController is the identity that runs verify -engine
	// kubernetes when it runs in the cluster (a CI pod); bind the Role
	// and ClusterRole to a user of yours otherwise.
	EngineController = "gpuform-verify"
	// EngineNode is the identity of each node's Job: it writes the
	// node's report.
	EngineNode = "gpuform-verify-node"
)

// EngineManifests returns the RBAC of verify -engine kubernetes in ns,
// in the order to create them, least privilege for each side:
//
//   - the controller (ServiceAccount gpuform-verify): nodes list (a
//     ClusterRole: nodes are not namespaced; one call finds every spec
//     host's node), and in ns jobs create, list and deletecollection,
//     pods list (why a Job's pod has not started), secrets create and
//     deletecollection (the run's spec bundle), configmaps get and
//     deletecollection (the reports). Lists and deletecollection by the
//     run's label keep the calls a fixed number whatever the fleet's size.
//   - the node side (ServiceAccount gpuform-verify-node): configmaps
//     create in ns, nothing else (its report; RBAC cannot narrow create
//     to a name).
func EngineManifests(ns string) []map[string]any {
	if ns == "" {
		ns = DefaultNamespace
	}
	meta := func(name string, namespaced bool) obj {
		m := obj{"name": name, "labels": obj{"app.kubernetes.io/name": "gpuform-verify", "app.kubernetes.io/part-of": "gpuform"}}
		if namespaced {
			m["namespace"] = ns
		}
		return m
	}
	sa := func(name string) []any { return []any{obj{"kind": "ServiceAccount", "name": name, "namespace": ns}} }
	rule := func(group, resource string, verbs ...string) obj {
		vs := make([]any, len(verbs))
		for i, v := range verbs {
			vs[i] = v
		}
		return obj{"apiGroups": []any{group}, "resources": []any{resource}, "verbs": vs}
	}
	binding := func(kind, name, role string, subjects []any, namespaced bool) obj {
		return obj{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta(name, namespaced),
			"roleRef": obj{"apiGroup": "rbac.authorization.k8s.io", "kind": strings.TrimSuffix(kind, "Binding"), "name": role}, "subjects": subjects}
	}
	return []map[string]any{
		// The same Namespace object as health mode's manifests, so
		// applying both sets never fights over it.
		{"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": ns, "labels": obj{"app.kubernetes.io/name": "gpuform-health", "app.kubernetes.io/part-of": "gpuform"}}},
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(EngineController, true)},
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(EngineNode, true)},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(EngineController, false),
			"rules": []any{rule("", "nodes", "list")}},
		binding("ClusterRoleBinding", EngineController, EngineController, sa(EngineController), false),
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(EngineController, true),
			"rules": []any{
				rule("batch", "jobs", "create", "list", "deletecollection"),
				rule("", "pods", "list"),
				rule("", "secrets", "create", "deletecollection"),
				rule("", "configmaps", "get", "deletecollection"),
			}},
		binding("RoleBinding", EngineController, EngineController, sa(EngineController), true),
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(EngineNode, true),
			"rules": []any{rule("", "configmaps", "create")}},
		binding("RoleBinding", EngineNode, EngineNode, sa(EngineNode), true),
	}
}

// EngineManifestsYAML is EngineManifests as one YAML stream.
func EngineManifestsYAML(ns string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# gpuform verify -engine kubernetes: the controller's and the node side's RBAC.\n")
	b.WriteString("# Written by gpuform kubernetes manifests -engine; the image is the spec's verify { kubernetes { image } }.\n")
	return yamlDocuments(&b, EngineManifests(ns))
}

// yamlDocuments appends objs to b as YAML documents, each after "---",
// indented by two as kubectl writes them, and returns b's bytes.
func yamlDocuments[T any](b *bytes.Buffer, objs []T) ([]byte, error) {
	for _, x := range objs {
		b.WriteString("---\n")
		enc := yaml.NewEncoder(b)
		enc.SetIndent(2)
		if err := enc.Encode(x); err != nil {
			return nil, err
		}
		_ = enc.Close()
	}
	return b.Bytes(), nil
}
