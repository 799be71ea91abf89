package gres_test

import (
	"testing"

	"github.com/gpuform/gpuform/provision/gres"
)

// TestConfDeclaresGPUs: the spellings TestConfDeclaresGPUsAsSlurmdReads
// holds to real slurmd 22.05, for machines without Slurm, plus lines
// gpuform cannot read (taken to declare GPUs when they mention them).
func TestConfDeclaresGPUs(t *testing.T) {
	cases := map[string]bool{
		"Name=gpu File=/dev/nvidia[0-7]":                         true,
		"Name = gpu File = /dev/nvidia[0-7]":                     true,
		`Name="gpu" Type="h100"`:                                 true,
		"NAME=GPU COUNT=8":                                       true,
		"name=gpu \\\n  File=/dev/nvidia0":                       true,
		"NodeName=gpu001 Name=gpu Count=8":                       true,
		"NodeName=gpu[000-099] Name=gpu Count=8":                 true,
		"NodeName=gpu001.dc1 Name=gpu Count=8":                   true,
		"AutoDetect=nvml":                                        true,
		"NodeName=gpu[001-004] AutoDetect=nvml":                  true,
		"Name=gpu Type=\"h100 File=/dev/nvidia0":                 true, // unbalanced quote: unreadable, mentions gpu
		"NodeName=gpu[001 Name=gpu Count=8":                      true, // a host list gpuform cannot expand
		"NodeName=other[01-04] Name=gpu Count=8":                 false,
		"# Name=gpu Count=8":                                     false,
		"Name=mps Count=200 File=/dev/nvidia0":                   false,
		"Name=gpu\\#1 Count=8":                                   false, // "\#" is no comment: the name is "gpu\#1"
		"Name=nic Count=2 # Name=gpu once lived here":            false,
		"NodeName=gpu002 Name=gpu Count=8 # another node's GPUs": false,
	}
	for line, want := range cases {
		got := false
		for _, l := range gres.ParseConf(line + "\n") {
			got = got || l.DeclaresGPUs("gpu001")
		}
		if got != want {
			t.Errorf("%q: declares GPUs %v, want %v", line, got, want)
		}
	}
	ls := gres.ParseConf("# a\nName=mps Count=1\n\nName = gpu \\\n File=/dev/nvidia0\n")
	if len(ls) != 2 || ls[1].N != 4 || ls[1].Keys["file"] != "/dev/nvidia0" {
		t.Errorf("line numbers and keys: %+v", ls)
	}
}
