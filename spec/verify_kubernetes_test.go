package spec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// TestVerifyKubernetes: verify { kubernetes } reads the Job's image,
// service account, priority class, tolerations (kubectl taint syntax)
// and node_name template; each bad value is an error at its own line.
func TestVerifyKubernetes(t *testing.T) {
	t.Parallel()
	src := func(body string) map[string][]byte {
		return map[string][]byte{"main.gpuform.hcl": []byte("node \"a\" {\n  hosts = [\"h1\"]\n  verify {\n    kubernetes {\n" + body + "    }\n  }\n}\n")}
	}
	cfg, diags := spec.LoadFiles(src(`      image           = "registry.example.com/gpuform:0.1.0"
      service_account = "gpuform-verify-node"
      priority_class  = "system-node-critical"
      tolerations     = ["nvidia.com/gpu:NoSchedule", "example.com/maint=rack7:NoExecute", "gpuform.dev/unhealthy"]
      node_name       = "{host}"
`), spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	k := cfg.Nodes[0].Verify.Kubernetes
	if k == nil || k.Image.V != "registry.example.com/gpuform:0.1.0" || k.ServiceAccount.V != "gpuform-verify-node" || k.PriorityClass.V != "system-node-critical" || k.NodeName.V != "{host}" {
		t.Fatalf("kubernetes = %+v", k)
	}
	want := []spec.Toleration{
		{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"},
		{Key: "example.com/maint", Operator: "Equal", Value: "rack7", Effect: "NoExecute"},
		{Key: "gpuform.dev/unhealthy", Operator: "Exists"},
	}
	if diff := cmp.Diff(want, k.Tolerations, cmpopts.IgnoreFields(spec.Toleration{}, "Range")); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		name, body, summary string
		line                int
	}{
		{"no image", "      service_account = \"x\"\n", "Missing required argument", 4},
		{"image with a space", "      image = \"registry.example.com/gpuform 0.1\"\n", "Invalid kubernetes image", 5},
		{"service account in capitals", "      image = \"r.example.com/g:1\"\n      service_account = \"Verify\"\n", "Invalid kubernetes service_account", 6},
		{"priority class with a slash", "      image = \"r.example.com/g:1\"\n      priority_class = \"a/b\"\n", "Invalid kubernetes priority_class", 6},
		{"toleration effect", "      image = \"r.example.com/g:1\"\n      tolerations = [\"ok\",\n        \"nvidia.com/gpu:NoScheduel\"]\n", "Invalid kubernetes toleration", 7},
		{"toleration key", "      image = \"r.example.com/g:1\"\n      tolerations = [\"a b\"]\n", "Invalid kubernetes toleration", 6},
		{"node_name braces", "      image = \"r.example.com/g:1\"\n      node_name = \"{fqdn}\"\n", "Invalid kubernetes node_name", 6},
		{"node_name capitals", "      image = \"r.example.com/g:1\"\n      node_name = \"GPU-{short}\"\n", "Invalid kubernetes node_name", 6},
	} {
		_, diags := spec.LoadFiles(src(c.body), spec.LoadOptions{BuiltinModules: modules.FS()})
		if len(diags) != 1 || diags[0].Summary != c.summary || diags[0].Subject == nil || diags[0].Subject.Start.Line != c.line {
			t.Errorf("%s: %v, want %q at line %d", c.name, diags, c.summary, c.line)
		}
	}
	for host, want := range map[string]string{"gpu001.example.com": "gpu001", "sim://hgx-h100-converged/gpu011": "gpu011"} {
		if got, err := spec.KubeNodeName("", host); err != nil || got != want {
			t.Errorf("KubeNodeName(%q) = %q, %v; want %q", host, got, err, want)
		}
	}
}
