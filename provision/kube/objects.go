package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// The calls of verify -engine kubernetes (provision/engine/kubernetes):
// list nodes; create, list and delete Jobs; list their pods; create the
// run's bundle Secret; create (on the node), get and delete report
// ConfigMaps. Lists are read in pages (listPage objects each), every
// page bounded by maxResponse, and at most maxPages of them.
const (
	listPage = 100
	maxPages = 200
)

// OwnerReference names an object's owner (a Job owns its report).
type OwnerReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
}

// Meta is the metadata the engine's objects carry.
type Meta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []OwnerReference  `json:"ownerReferences,omitempty"`
	CreationTimestamp string            `json:"creationTimestamp,omitempty"`
	// DeletionTimestamp is set once the object is being deleted (a pod
	// then ends within its grace period); the API server sets it, a
	// create never does.
	DeletionTimestamp string `json:"deletionTimestamp,omitempty"`
}

// Condition is a Job's or a Pod's condition.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Job is the part of a batch/v1 Job the engine reads.
type Job struct {
	Metadata Meta `json:"metadata"`
	Status   struct {
		Active     int         `json:"active,omitempty"`
		Succeeded  int         `json:"succeeded,omitempty"`
		Failed     int         `json:"failed,omitempty"`
		StartTime  string      `json:"startTime,omitempty"`
		Conditions []Condition `json:"conditions,omitempty"`
	} `json:"status"`
}

// ContainerState is one of a container's states.
type ContainerState struct {
	Waiting *struct {
		Reason  string `json:"reason,omitempty"`
		Message string `json:"message,omitempty"`
	} `json:"waiting,omitempty"`
	Running *struct {
		StartedAt string `json:"startedAt,omitempty"`
	} `json:"running,omitempty"`
	Terminated *struct {
		ExitCode int    `json:"exitCode"`
		Reason   string `json:"reason,omitempty"`
		Message  string `json:"message,omitempty"`
	} `json:"terminated,omitempty"`
}

// Pod is the part of a Pod the engine reads.
type Pod struct {
	Metadata Meta `json:"metadata"`
	Spec     struct {
		NodeName string `json:"nodeName,omitempty"`
	} `json:"spec"`
	Status struct {
		Phase             string      `json:"phase,omitempty"`
		Reason            string      `json:"reason,omitempty"`
		Message           string      `json:"message,omitempty"`
		Conditions        []Condition `json:"conditions,omitempty"`
		ContainerStatuses []struct {
			Name  string         `json:"name"`
			State ContainerState `json:"state"`
		} `json:"containerStatuses,omitempty"`
	} `json:"status"`
}

// ConfigMap is a ConfigMap (a node's report travels in one).
type ConfigMap struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   Meta              `json:"metadata"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
}

// Secret is a Secret (the run's spec bundle travels in one).
type Secret struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   Meta              `json:"metadata"`
	Type       string            `json:"type,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"`
	Immutable  bool              `json:"immutable,omitempty"`
}

// strict makes the API server refuse an object with a field it does not
// know, rather than drop the field with a warning.
const strict = "?fieldValidation=Strict"

func nsPath(group, ns, resource string) string {
	base := "/api/v1"
	if group != "" {
		base = "/apis/" + group
	}
	return base + "/namespaces/" + url.PathEscape(ns) + "/" + resource
}

func inNS(resource, ns string) string { return resource + " in namespace " + ns }

// list reads every page of a list at path (selector: a label selector,
// "" for all) into add, one page's items at a time.
func list[T any](ctx context.Context, c *Client, path, selector, resource string, add func([]T)) error {
	cont := ""
	for page := 0; ; page++ {
		if page == maxPages {
			return fmt.Errorf("kubernetes: list %s: more than %d objects; narrow it with a label selector", resource, listPage*maxPages)
		}
		q := url.Values{"limit": {fmt.Sprint(listPage)}}
		if selector != "" {
			q.Set("labelSelector", selector)
		}
		if cont != "" {
			q.Set("continue", cont)
		}
		var out struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []T `json:"items"`
		}
		if err := c.do(ctx, "list", http.MethodGet, path+"?"+q.Encode(), resource, "", nil, &out); err != nil {
			return err
		}
		add(out.Items)
		if cont = out.Metadata.Continue; cont == "" {
			return nil
		}
	}
}

// NodeNames lists the names of the cluster's nodes that match selector
// ("" for every node).
func (c *Client) NodeNames(ctx context.Context, selector string) ([]string, error) {
	var names []string
	err := list(ctx, c, "/api/v1/nodes", selector, "nodes", func(items []struct {
		Metadata Meta `json:"metadata"`
	}) {
		for _, n := range items {
			names = append(names, n.Metadata.Name)
		}
	})
	return names, err
}

// CreateJob creates job (a batch/v1 Job object) in ns and returns the
// Job as created (its uid).
func (c *Client) CreateJob(ctx context.Context, ns string, job any) (*Job, error) {
	var j Job
	if err := c.do(ctx, "create", http.MethodPost, nsPath("batch/v1", ns, "jobs")+strict, inNS("jobs", ns), "application/json", job, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// ListJobs lists the Jobs in ns that match selector.
func (c *Client) ListJobs(ctx context.Context, ns, selector string) ([]Job, error) {
	var out []Job
	err := list(ctx, c, nsPath("batch/v1", ns, "jobs"), selector, inNS("jobs", ns), func(items []Job) { out = append(out, items...) })
	return out, err
}

// ListPods lists the pods in ns that match selector.
func (c *Client) ListPods(ctx context.Context, ns, selector string) ([]Pod, error) {
	var out []Pod
	err := list(ctx, c, nsPath("", ns, "pods"), selector, inNS("pods", ns), func(items []Pod) { out = append(out, items...) })
	return out, err
}

// CreateSecret creates s in its namespace.
func (c *Client) CreateSecret(ctx context.Context, s *Secret) error {
	s.APIVersion, s.Kind = "v1", "Secret"
	ns := s.Metadata.Namespace
	return c.do(ctx, "create", http.MethodPost, nsPath("", ns, "secrets")+strict, inNS("secrets", ns), "application/json", s, nil)
}

// CreateConfigMap creates cm in its namespace.
func (c *Client) CreateConfigMap(ctx context.Context, cm *ConfigMap) error {
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	ns := cm.Metadata.Namespace
	return c.do(ctx, "create", http.MethodPost, nsPath("", ns, "configmaps")+strict, inNS("configmaps", ns), "application/json", cm, nil)
}

// GetConfigMap reads the ConfigMap ns/name.
func (c *Client) GetConfigMap(ctx context.Context, ns, name string) (*ConfigMap, error) {
	var cm ConfigMap
	if err := c.do(ctx, "get", http.MethodGet, nsPath("", ns, "configmaps")+"/"+url.PathEscape(name), inNS("configmaps/"+name, ns), "", nil, &cm); err != nil {
		return nil, err
	}
	return &cm, nil
}

// deleteOptions deletes in the background: a Job's pods go with it.
var deleteOptions = map[string]any{"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}

// DeleteCollection deletes the objects of resource ("jobs",
// "configmaps", "secrets") in ns that match selector, in one call.
func (c *Client) DeleteCollection(ctx context.Context, ns, resource, selector string) error {
	group := ""
	if resource == "jobs" {
		group = "batch/v1"
	}
	path := nsPath(group, ns, resource) + "?" + url.Values{"labelSelector": {selector}}.Encode()
	return c.do(ctx, "deletecollection", http.MethodDelete, path, inNS(resource, ns), "application/json", deleteOptions, nil)
}
