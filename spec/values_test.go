package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpandHostPattern(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
		err      string
	}{
		{name: "plain", in: "gpu1.dc", want: []string{"gpu1.dc"}},
		{name: "padded range", in: "gpu[001-003].dc1", want: []string{"gpu001.dc1", "gpu002.dc1", "gpu003.dc1"}},
		{name: "list and range", in: "gpu[1-2,7]", want: []string{"gpu1", "gpu2", "gpu7"}},
		// Two groups multiply, as in Slurm's hostlist.
		{name: "two groups", in: "r[1-2]-g[1-2]", want: []string{"r1-g1", "r1-g2", "r2-g1", "r2-g2"}},
		{name: "sim", in: "sim://hgx-h100-stale/n[1-2]", want: []string{"sim://hgx-h100-stale/n1", "sim://hgx-h100-stale/n2"}},
		{name: "unclosed", in: "gpu[1-4", err: "never closed"},
		{name: "stray close", in: "gpu1-4]", err: "without a matching"},
		{name: "backwards", in: "gpu[9-1]", err: "runs backwards"},
		{name: "empty group", in: "gpu[]", err: "empty range"},
		{name: "letters", in: "gpu[a-c]", err: "not a number"},
		{name: "half range", in: "gpu[1-]", err: "must be a number"},
		{name: "nested", in: "gpu[1[2]]", err: "nests"},
		{name: "too many", in: "gpu[1-200000]", err: "larger than"},
		{name: "shell chars", in: "gpu1;reboot", err: "not allowed"},
		{name: "spaces", in: " gpu1", err: "surrounding spaces"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ExpandHostPattern(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want it to mention %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	cases := map[string]string{
		"16GiB": "16GiB", "64g": "64GiB", "512MiB": "512MiB", "1024": "1KiB", "50%": "50%",
		"unlimited": "unlimited", "1.5GiB": "1536MiB", "2TiB": "2TiB", "1GB": "1000000000B",
	}
	for in, want := range cases {
		s, err := ParseSize(in)
		if err != nil {
			t.Errorf("ParseSize(%q): %v", in, err)
			continue
		}
		if s.String() != want {
			t.Errorf("ParseSize(%q) = %s, want %s", in, s, want)
		}
	}
	for _, bad := range []string{"", "16 gigs", "GiB", "150%", "0%", "-1GiB", "1.5", "1e400"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	if got := (Size{Percent: 50}).Resolve(2 << 40); got != 1<<40 {
		t.Errorf("50%% of 2TiB = %d", got)
	}
}

func TestParseVersion(t *testing.T) {
	v, err := ParseVersion("550.127.08")
	if err != nil || v.Major() != 550 || v.Minor() != 127 || v.String() != "550.127.08" {
		t.Errorf("got %+v, %v", v, err)
	}
	for _, c := range []struct {
		a, b string
		want int
	}{{"12.4.1", "12.4", 1}, {"12.4", "12.4.0", 0}, {"550.54.15", "550.127.08", -1}, {"2.21.5-1", "2.21.5", 0}} {
		a, _ := ParseVersion(c.a)
		b, _ := ParseVersion(c.b)
		if got := a.Compare(b); got != c.want {
			t.Errorf("%s vs %s = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	for _, bad := range []string{"", "v550", "550.1; rm -rf /", "$(id)", "1..2", "550.127.08-", "12.4.1.2.3"} {
		if _, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) accepted", bad)
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(`node "a" { hosts = ["gpu[1-4]"] driver { version = "550.127.08" } }`))
	f.Add([]byte("locals {\n a = local.b\n b = local.a\n}\n"))
	f.Add([]byte("variable \"x\" {\n type = list(number)\n default = [1]\n}\ninventory \"i\" { hosts = [\"h[01-10]\"] }\n"))
	f.Add([]byte("node \"n\" {\n hosts = [\"h\"]\n hardware = { gpu_model = \"H100\", gpu_count = 1, interconnect = \"pcie\", gpus = [{index = 0}] }\n numa {\n dynamic \"bind\" {\n for_each = [0]\n content {\n gpus = [bind.value]\n node = 0\n }\n }\n }\n}\n"))
	f.Add([]byte(`module "m" { source = "gpuform/x" }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, _ := LoadFiles(map[string][]byte{"fuzz.gpuform.hcl": src}, LoadOptions{})
		if cfg == nil {
			t.Fatal("LoadFiles returned no config")
		}
	})
}

// genFleetSpec writes a spec with n node blocks, each with the full set of
// sub-blocks, as a large fleet's spec would have.
func genFleetSpec(n int) []byte {
	var b strings.Builder
	b.WriteString("variable \"driver\" { default = \"550.127.08\" }\nlocals { cuda = \"12.4.1\" }\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `
inventory "rack%[1]d" {
  hosts  = ["gpu%[1]d-[01-08].dc1"]
  user   = "ops"
  become = "sudo"
}

node "rack%[1]d" {
  hosts = inventory.rack%[1]d
  driver {
    version          = var.driver
    kernel_module    = "open"
    persistence_mode = true
    fabric_manager   = true
  }
  cuda { version = local.cuda }
  nccl { version = "2.21.5" }
  container {
    runtime          = "docker"
    default_shm_size = "16GiB"
    ulimits          = { memlock = "unlimited", stack = "64MiB" }
  }
  shm { size = "50%%" }
  numa {
    balancing = false
    bind {
      gpus = [0, 1, 2, 3]
      node = 0
    }
    bind {
      gpus = [4, 5, 6, 7]
      node = 1
    }
  }
  sysctl      = { "vm.swappiness" = 1 }
  kernel_args = ["iommu=pt"]
  verify {
    nvml {
      gpus = 8
      ecc  = true
    }
  }
}
`, i)
	}
	return []byte(b.String())
}
