package alerts

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/promtool"
	"github.com/gpuform/gpuform/spec"
)

func load(t *testing.T, src string) *spec.Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.gpuform.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := spec.Load(dir, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg
}

func TestRules(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		want     []string // alerts present
		notWant  []string // alerts absent
		contains []string // text of the written file
	}{
		{
			name: "limits from the spec",
			src: `node "train" {
  hosts = ["gpu[01-02].example.com"]
  driver {
    version = "570.133.20"
  }
  verify {
    nvml {
      max_temperature_c = 83
      nvlink            = "all_active"
    }
  }
}`,
			want:     []string{"GPUFormGPUTemperatureHigh", "GPUFormNVLinkDown", "GPUFormDriverNotPinned", "GPUFormCheckFailing"},
			contains: []string{`> 83`, `host=~"gpu01\\.example\\.com|gpu02\\.example\\.com"`, `driver_version!="570.133.20"`, "for: 20m"},
		},
		{
			name: "nothing to compare with",
			src: `node "infer" {
  hosts = ["10.0.0.7"]
}`,
			want:     []string{"GPUFormGPUUncorrectableECCErrors", "GPUFormGPURowRemapFailure", "GPUFormGPURowRemapPending", "GPUFormCheckFailing", "GPUFormVerifyResultExpired"},
			notWant:  []string{"GPUFormGPUTemperatureHigh", "GPUFormNVLinkDown", "GPUFormDriverNotPinned"},
			contains: []string{`host="10.0.0.7"`},
		},
		{
			name: "a sensitive driver version stays out of the rules",
			src: `variable "drv" {
  type      = string
  default   = "570.133.20"
  sensitive = true
}
node "train" {
  hosts = ["gpu01"]
  driver {
    version = var.drv
  }
}`,
			notWant: []string{"GPUFormDriverNotPinned", "570.133.20"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, Rules(load(t, tt.src), Options{CheckFailingFor: 20 * time.Minute})); err != nil {
				t.Fatal(err)
			}
			text := b.String()
			for _, w := range append(tt.want, tt.contains...) {
				if !strings.Contains(text, w) {
					t.Errorf("no %q in\n%s", w, text)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(text, w) {
					t.Errorf("%q in\n%s", w, text)
				}
			}
			path := filepath.Join(t.TempDir(), "rules.yml")
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			promtool.CheckRules(t, path)
		})
	}
}
