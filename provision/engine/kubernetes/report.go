package kubernetes

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gpuform/gpuform/internal/readlimit"
	engineslurm "github.com/gpuform/gpuform/provision/engine/slurm"
	"github.com/gpuform/gpuform/provision/kube"
)

// A node's report comes back in a ConfigMap the node side creates,
// gzipped JSON of the slurm engine's NodeReport under reportKey, owned
// by the node's Job (so it goes when the Job goes, even if the
// controller does not live to delete it) and labelled with the run. Not
// the termination message: the kubelet keeps 4096 bytes of it, and an
// 8-GPU node's report with its NVML facts is tens of kilobytes (a few
// even gzipped, and growing with the checks); a cut report would be
// lost whole. Not pod logs: they need pods/log, mix the report with
// whatever else the program prints, and are rotated by the node.
const (
	reportKey = "report.json.gz"
	// maxReportConfigMap bounds a report as it travels: a ConfigMap is at
	// most 1 MiB (etcd's object limit); the rest is headroom.
	maxReportConfigMap = 900 << 10
	// maxReportJSON bounds a report as it is decoded.
	maxReportJSON = 8 << 20
	// MACAnnotation on a report ConfigMap is the HMAC-SHA256 of the
	// report under its node's report key (reportMAC). The run id, the
	// Job's uid and the node name are no secrets (anyone who may list
	// pods in the namespace reads them), so they tell the controller
	// which report is meant, not who wrote it: the key, which only the
	// node's pod gets, does.
	MACAnnotation = "gpuform.dev/report-mac"
)

// Labels and annotations of the run's objects.
const (
	// RunLabel is the run's id on every object it makes, so a rerun never
	// reads an earlier run's report and cleanup takes exactly its own.
	RunLabel = "gpuform.dev/run"
	// IndexLabel is a Job's place in the run (its pod carries it too).
	IndexLabel = "gpuform.dev/index"
	// NodeAnnotation is the node a Job verifies.
	NodeAnnotation = "gpuform.dev/node"
	appLabel       = "app.kubernetes.io/name"
	appName        = "gpuform-verify"
)

// NodeSide is where the node side of a run writes its report, from the
// pod's environment the engine gives its Job.
type NodeSide struct {
	// Node is the node the pod runs on (NODE_NAME, spec.nodeName).
	Node string
	// Namespace is the pod's (POD_NAMESPACE, metadata.namespace).
	Namespace string
	// Run is the run's id (GPUFORM_RUN).
	Run string
	// Job and JobUID are the Job that owns the report (GPUFORM_JOB, and
	// GPUFORM_JOB_UID from the pod's batch.kubernetes.io/controller-uid
	// label).
	Job, JobUID string
	// ConfigMap is the report's name (-engine-kube-report).
	ConfigMap string
	// Key is the node's report key (GPUFORM_REPORT_KEY).
	Key string
}

// Environment of the node side, as the Job sets it.
const (
	EnvNode      = "NODE_NAME"
	EnvNamespace = "POD_NAMESPACE"
	EnvRun       = "GPUFORM_RUN"
	EnvJob       = "GPUFORM_JOB"
	EnvJobUID    = "GPUFORM_JOB_UID"
	// EnvReportKey is the node's report key (hex), from the run's keys
	// Secret through a secretKeyRef: in no object a pod list shows, and
	// each pod gets its own node's key only. The node side takes it out
	// of its environment once read, so no command it runs inherits it.
	EnvReportKey = "GPUFORM_REPORT_KEY"
)

// NodeSideFromEnv reads the node side's place from the pod's environment;
// configMap is -engine-kube-report.
func NodeSideFromEnv(getenv func(string) string, configMap string) (NodeSide, error) {
	ns := NodeSide{Node: getenv(EnvNode), Namespace: getenv(EnvNamespace), Run: getenv(EnvRun), Job: getenv(EnvJob), JobUID: getenv(EnvJobUID), ConfigMap: configMap, Key: getenv(EnvReportKey)}
	for _, v := range []struct{ name, value string }{{EnvNode, ns.Node}, {EnvNamespace, ns.Namespace}, {EnvRun, ns.Run}, {EnvJob, ns.Job}, {EnvJobUID, ns.JobUID}, {EnvReportKey, ns.Key}} {
		if v.value == "" {
			return ns, fmt.Errorf("-engine-kube-report: %s is not set (the Job verify -engine kubernetes makes sets it)", v.name)
		}
	}
	return ns, nil
}

// WriteReport creates the node's report ConfigMap. A report too large
// for one is replaced by a report that says so, so the controller names
// the node's problem instead of hearing nothing.
func WriteReport(ctx context.Context, c *kube.Client, ns NodeSide, rep engineslurm.NodeReport) error {
	z, err := encodeReport(rep)
	if err != nil {
		return err
	}
	if len(z) > maxReportConfigMap {
		z, err = encodeReport(engineslurm.NodeReport{Node: rep.Node, Error: fmt.Sprintf("the node's report is %d bytes gzipped, more than the %d a report ConfigMap holds", len(z), maxReportConfigMap)})
		if err != nil {
			return err
		}
	}
	cm := &kube.ConfigMap{
		Metadata: kube.Meta{
			Name: ns.ConfigMap, Namespace: ns.Namespace,
			Labels:          map[string]string{RunLabel: ns.Run, appLabel: appName, "app.kubernetes.io/part-of": "gpuform"},
			Annotations:     map[string]string{NodeAnnotation: ns.Node, MACAnnotation: reportMAC(ns.Key, ns.Run, ns.Node, z)},
			OwnerReferences: []kube.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: ns.Job, UID: ns.JobUID}},
		},
		BinaryData: map[string][]byte{reportKey: z},
	}
	return c.CreateConfigMap(ctx, cm)
}

// reportMAC is the HMAC-SHA256, under key, of node's gzipped report z in
// run, in hex.
func reportMAC(key, run, node string, z []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	for _, part := range [][]byte{[]byte("gpuform-report"), []byte(run), []byte(node)} {
		m.Write(part)
		m.Write([]byte{0})
	}
	m.Write(z)
	return hex.EncodeToString(m.Sum(nil))
}

func encodeReport(rep engineslurm.NodeReport) ([]byte, error) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if err := json.NewEncoder(zw).Encode(rep); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// readReport checks and decodes the report ConfigMap of node's Job
// (run, jobUID, the node's report key): a ConfigMap of another run, or
// not owned by the Job, or not signed with the node's key, or naming
// another node, is never taken for its report. A launch's report
// (launch) holds the result of its command, a node's its host.
func readReport(cm *kube.ConfigMap, run, jobUID, node, key string, launch bool) (engineslurm.NodeReport, error) {
	var rep engineslurm.NodeReport
	if cm.Metadata.Labels[RunLabel] != run {
		return rep, fmt.Errorf("its report ConfigMap %s is labelled run %q, not %q", cm.Metadata.Name, cm.Metadata.Labels[RunLabel], run)
	}
	owned := false
	for _, o := range cm.Metadata.OwnerReferences {
		owned = owned || o.Kind == "Job" && o.UID == jobUID
	}
	if !owned {
		return rep, fmt.Errorf("its report ConfigMap %s is not owned by the run's Job (uid %s)", cm.Metadata.Name, jobUID)
	}
	z, ok := cm.BinaryData[reportKey]
	if !ok {
		return rep, fmt.Errorf("its report ConfigMap %s has no %s", cm.Metadata.Name, reportKey)
	}
	// Before anything of it is decoded: a report that is not the node
	// pod's own is not read at all.
	if mac := cm.Metadata.Annotations[MACAnnotation]; key == "" || !hmac.Equal([]byte(mac), []byte(reportMAC(key, run, node, z))) {
		return rep, fmt.Errorf("its report ConfigMap %s is not signed with the node's report key (%s): not written by the node's pod", cm.Metadata.Name, MACAnnotation)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return rep, fmt.Errorf("its report is not gzip: %v", err)
	}
	raw, err := readlimit.ReadAll(zr, "the node's report", maxReportJSON)
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return rep, fmt.Errorf("its report is not the JSON gpuform writes: %v", err)
	}
	if rep.Node != node {
		return rep, fmt.Errorf("its report names node %q", rep.Node)
	}
	switch {
	case rep.Error != "":
	case launch && (rep.NCCL == nil || len(rep.Hosts) != 0):
		return rep, errors.New("its report holds no result of the launch's command")
	case !launch && (len(rep.Hosts) != 1 || rep.NCCL != nil):
		return rep, errors.New("its report holds no host")
	}
	return rep, nil
}
