package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/diagview"
	"github.com/gpuform/gpuform/lint"
	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/bind"
	"github.com/gpuform/gpuform/provision/fleet"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/alerts"
	"github.com/gpuform/gpuform/spec"
)

// argsCmp compares arguments structs field by field, unexported fields
// (the raw -json flag, specFlags, connectFlags) included.
var argsCmp = cmp.AllowUnexported(planArguments{}, applyArguments{}, verifyArguments{}, factsArguments{}, showArguments{}, validateArguments{}, lintArguments{}, benchArguments{}, graphArguments{}, lockArguments{}, importArguments{}, fmtArguments{}, alertsArguments{}, bindArguments{}, versionArguments{}, specFlags{}, connectFlags{}, timeoutFlags{})

// TestParsePlanArguments parses plan's command lines into planArguments,
// after Terraform's arguments tests: each flag lands in its field, -json
// picks the JSON view, and what is left is the spec directory.
func TestParsePlanArguments(t *testing.T) {
	defaults := func() connectFlags { return connectFlags{parallelism: fleet.DefaultParallelism} }
	for _, tc := range []struct {
		name    string
		args    []string
		want    *planArguments
		wantErr string
	}{
		{"defaults", nil, &planArguments{Dir: ".", Conn: defaults()}, ""},
		{"dir", []string{"specs/a"}, &planArguments{Dir: "specs/a", Conn: defaults()}, ""},
		{"json one dash", []string{"-json", "d"}, &planArguments{Dir: "d", Conn: defaults(), ViewType: viewJSON, json: true}, ""},
		{"json two dashes", []string{"--json", "d"}, &planArguments{Dir: "d", Conn: defaults(), ViewType: viewJSON, json: true}, ""},
		{"out and detailed exit code", []string{"-out", "p.plan", "-detailed-exitcode"}, &planArguments{Dir: ".", Conn: defaults(), OutPath: "p.plan", DetailedExitCode: true}, ""},
		{"targets in order", []string{"-target", "gpu[001-002]", "-target=gpu009", "d"}, &planArguments{Dir: "d", Conn: defaults(), Targets: []string{"gpu[001-002]", "gpu009"}}, ""},
		{"vars and var files in command-line order", []string{"-var", "a=1", "-var-file", "x.gpuvars.hcl", "-var=a=2"},
			&planArguments{Dir: ".", Conn: defaults(), Spec: specFlags{vars: []spec.VarArg{{Value: "a=1"}, {File: true, Value: "x.gpuvars.hcl"}, {Value: "a=2"}}}}, ""},
		{"take over", []string{"-take-over", "sysctl", "-take-over", "limits"},
			&planArguments{Dir: ".", Conn: defaults(), Spec: specFlags{takeOver: []string{"sysctl", "limits"}}}, ""},
		{"connection and probe timeout", []string{"-parallelism", "4", "-accept-new-host-keys", "-connect-timeout", "5", "-probe-timeout", "90s", "-allow-local", "-identity", "k", "-known-hosts", "kh", "-ssh-config", "none"},
			&planArguments{Dir: ".", Conn: connectFlags{parallelism: 4, acceptNew: true, connectTimeout: "5", timeouts: timeoutFlags{probe: "90s"}, allowLocal: true, identities: []string{"k"}, knownHosts: []string{"kh"}, sshConfig: "none"}}, ""},
		{"two dirs", []string{"a", "b"}, nil, "accepts at most 1 arg(s), received 2"},
		{"take over what is no resource", []string{"-take-over", "sysctl.net"}, nil, `invalid argument "sysctl.net" for "--take-over" flag: "sysctl.net" is not a resource; one of: driver_package, `},
		{"step timeout is apply's", []string{"-step-timeout", "1m"}, nil, "unknown flag: --step-timeout"},
		{"auto-approve is apply's", []string{"-auto-approve"}, nil, "unknown flag: --auto-approve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePlanArguments(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, argsCmp); d != "" {
				t.Errorf("planArguments (-want +got):\n%s", d)
			}
		})
	}
}

// TestParseApplyArguments parses apply's command lines into
// applyArguments; a negative -lock-timeout is refused with the error apply
// has always given.
func TestParseApplyArguments(t *testing.T) {
	defaults := func() connectFlags { return connectFlags{parallelism: fleet.DefaultParallelism} }
	for _, tc := range []struct {
		name    string
		args    []string
		want    *applyArguments
		wantErr string
	}{
		{"defaults", nil, &applyArguments{Dir: ".", Conn: defaults()}, ""},
		{"plan file", []string{"tf.plan"}, &applyArguments{Dir: "tf.plan", Conn: defaults()}, ""},
		{"json and auto-approve", []string{"-json", "-auto-approve", "d"}, &applyArguments{Dir: "d", Conn: defaults(), ViewType: viewJSON, AutoApprove: true, json: true}, ""},
		{"verbose and lock timeout", []string{"-verbose", "-lock-timeout", "5m"}, &applyArguments{Dir: ".", Conn: defaults(), Verbose: true, LockTimeout: 5 * time.Minute}, ""},
		{"lock timeout zero", []string{"-lock-timeout=0s"}, &applyArguments{Dir: ".", Conn: defaults()}, ""},
		{"step and probe timeouts", []string{"-step-timeout", "45m", "-probe-timeout", "2m"},
			&applyArguments{Dir: ".", Conn: connectFlags{parallelism: fleet.DefaultParallelism, timeouts: timeoutFlags{probe: "2m", step: "45m"}}}, ""},
		{"targets and take over", []string{"-target", "gpu001", "-take-over", "sysctl"},
			&applyArguments{Dir: ".", Conn: defaults(), Targets: []string{"gpu001"}, Spec: specFlags{takeOver: []string{"sysctl"}}}, ""},
		{"negative lock timeout", []string{"-lock-timeout", "-1s"}, nil, "-lock-timeout -1s: a duration of 0s or more is required"},
		{"bad lock timeout", []string{"-lock-timeout", "soon"}, nil, `invalid argument "soon" for "--lock-timeout" flag: time: invalid duration "soon"`},
		{"detailed exit code is plan's", []string{"-detailed-exitcode"}, nil, "unknown flag: --detailed-exitcode"},
		{"out is plan's", []string{"-out", "p"}, nil, "unknown flag: --out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseApplyArguments(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, argsCmp); d != "" {
				t.Errorf("applyArguments (-want +got):\n%s", d)
			}
		})
	}
}

// TestParseVerifyArguments parses verify's command lines: -json is
// -format json, -tier is parsed once, the --local-only flags are refused
// without --local, and --local -nccl raises the tier to full, each with
// the error verify has always given.
func TestParseVerifyArguments(t *testing.T) {
	conn := connectFlags{parallelism: fleet.DefaultParallelism}
	base := func(f func(a *verifyArguments)) *verifyArguments {
		a := &verifyArguments{Dir: ".", Conn: conn, Tier: verify.TierProbe, Format: "text", tier: "probe",
			Engines: engineFlags{Engine: "ssh", SlurmStartTimeout: 5 * time.Minute, KubeStartTimeout: 5 * time.Minute}}
		f(a)
		return a
	}
	for _, tc := range []struct {
		name    string
		args    []string
		want    *verifyArguments
		wantErr string
	}{
		{"defaults", nil, base(func(*verifyArguments) {}), ""},
		{"json is format json", []string{"-json", "d"}, base(func(a *verifyArguments) { a.Dir, a.Format, a.json = "d", "json", true }), ""},
		{"format json and json agree", []string{"-format", "json", "-json"}, base(func(a *verifyArguments) { a.Format, a.json = "json", true }), ""},
		{"json conflicts with another format", []string{"-json", "-format", "junit"}, nil, "--json conflicts with --format junit: give one of them"},
		{"tier and out", []string{"-tier", "quick", "-format", "junit", "-out", "r.xml", "-target", "gpu001"},
			base(func(a *verifyArguments) {
				a.tier, a.Tier, a.Format, a.OutPath, a.Targets = "quick", verify.TierQuick, "junit", "r.xml", []string{"gpu001"}
			}), ""},
		{"bad tier", []string{"-tier", "deep"}, nil, "unknown tier"},
		{"bad format", []string{"-format", "yaml"}, nil, `-format must be text, json, junit or prometheus, not "yaml"`},
		{"local nccl raises the tier", []string{"--local", "-nccl"}, base(func(a *verifyArguments) { a.Local, a.NCCL, a.Tier = true, true, verify.TierFull }), ""},
		{"local nccl keeps fleet", []string{"--local", "-nccl", "-tier", "fleet"}, base(func(a *verifyArguments) { a.Local, a.NCCL, a.tier, a.Tier = true, true, "fleet", verify.TierFleet }), ""},
		{"nccl needs local", []string{"-nccl"}, nil, "-nccl works only with --local; to run nccl-tests on the spec's hosts use -tier full"},
		{"node needs local", []string{"-node", "gpu"}, nil, "-node works only with --local; to verify some hosts use -target"},
		{"mock-nvml needs local", []string{"-mock-nvml", "dgxh100"}, nil, "-mock-nvml works only with --local"},
		{"slurm-drain needs local", []string{"-slurm-drain"}, nil, "-slurm-drain works only with --local (it drains the node it runs on, as Slurm's HealthCheckProgram)"},
		{"mock-fault needs mock-nvml", []string{"--local", "-mock-fault", "pcie_x8:3"}, nil, "-mock-fault works only with -mock-nvml"},
		{"unknown mock system", []string{"--local", "-mock-nvml", "nosuch"}, nil, `-mock-nvml: unknown simulated system "nosuch" (known: `},
		{"prolog gate needs local", []string{"-slurm-prolog"}, nil, "-slurm-prolog works only with --local (it gates the node it runs on, as Slurm's Prolog=)"},
		{"epilog gate needs local", []string{"-slurm-epilog"}, nil, "-slurm-epilog works only with --local (it gates the node it runs on, as Slurm's Epilog=)"},
		{"one Slurm mode", []string{"--local", "-slurm-prolog", "-slurm-drain"}, nil, "-slurm-drain (HealthCheckProgram), -slurm-prolog (Prolog=) and -slurm-epilog (Epilog=) are different modes: give one"},
		{"prolog gate runs the quick tier", []string{"--local", "-slurm-prolog"},
			base(func(a *verifyArguments) {
				a.Local, a.SlurmProlog, a.tier, a.Tier = true, true, "quick", verify.TierQuick
			}), ""},
		{"prolog gate keeps a tier given", []string{"--local", "-slurm-prolog", "-tier", "probe"},
			base(func(a *verifyArguments) { a.Local, a.SlurmProlog = true, true }), ""},
		{"prolog gate requires a burn-in", []string{"--local", "-slurm-prolog", "-require-burnin"},
			base(func(a *verifyArguments) {
				a.Local, a.SlurmProlog, a.RequireBurnin, a.tier, a.Tier = true, true, true, "quick", verify.TierQuick
			}), ""},
		{"burnin tier not with engine slurm", []string{"-engine", "slurm", "-tier", "burnin"}, nil, "-tier burnin works only with -engine ssh so far: -engine slurm does not size its job for the spec's burn-in duration"},
		{"require-burnin not with engine slurm", []string{"-engine", "slurm", "-require-burnin"}, nil, "-require-burnin works only with -engine ssh so far: -engine slurm does not carry it to the nodes"},
		{"epilog gate runs the probe tier", []string{"--local", "-slurm-epilog"},
			base(func(a *verifyArguments) { a.Local, a.SlurmEpilog = true, true }), ""},
		{"health mode", []string{"--local", "-slurm-drain", "-mock-nvml", "dgxh100", "-mock-fault-once", "pcie_x8:3", "-node", "gpu", "-processes", "-verbose"},
			base(func(a *verifyArguments) {
				a.Local, a.SlurmDrain, a.MockNVML, a.MockFaultsOnce, a.Node, a.Processes, a.Verbose = true, true, "dgxh100", []string{"pcie_x8:3"}, "gpu", true, true
			}), ""},
		// The engines (issue 33).
		{"engine slurm scoped and bounded", []string{"-engine", "slurm", "-slurm-job", "4711", "-slurm-partition", "gpu", "-slurm-start-timeout", "1m", "-deadline", "20m"},
			base(func(a *verifyArguments) {
				a.Engines = engineFlags{Engine: "slurm", SlurmJob: "4711", SlurmPartition: "gpu", SlurmStartTimeout: time.Minute, Deadline: 20 * time.Minute, KubeStartTimeout: 5 * time.Minute}
			}), ""},
		{"engine kubernetes scoped and bounded", []string{"-engine", "kubernetes", "-kubeconfig", "/k", "-namespace", "gpu", "-selector", "pool=a", "-kube-start-timeout", "2m", "-deadline", "20m"},
			base(func(a *verifyArguments) {
				a.Kubeconfig, a.KubeNamespace = "/k", "gpu"
				a.Engines = engineFlags{Engine: "kubernetes", SlurmStartTimeout: 5 * time.Minute, Selector: "pool=a", KubeStartTimeout: 2 * time.Minute, Deadline: 20 * time.Minute}
			}), ""},
		{"selector needs engine kubernetes", []string{"-selector", "pool=a"}, nil, "-selector works only with -engine kubernetes"},
		{"kube-start-timeout needs engine kubernetes", []string{"-engine", "slurm", "-kube-start-timeout", "1m"}, nil, "-kube-start-timeout works only with -engine kubernetes"},
		{"burnin tier not with engine kubernetes", []string{"-engine", "kubernetes", "-tier", "burnin"}, nil, "-tier burnin works only with -engine ssh so far: -engine kubernetes does not size its job"},
		{"require-burnin not with engine kubernetes", []string{"-engine", "kubernetes", "-require-burnin"}, nil, "-require-burnin works only with -engine ssh so far: -engine kubernetes does not carry it"},
		{"engine-kube-report needs engine-node", []string{"--local", "-engine-kube-report", "r"}, nil, "-engine-kube-report works only with -engine-node"},
		{"engine-hold, a launch worker", []string{"--local", "-engine-hold", "5m"}, base(func(a *verifyArguments) { a.Local, a.Engines.EngineHold = true, 5*time.Minute }), ""},
		{"engine-hold needs local", []string{"-engine-hold", "5m"}, nil, "-engine-hold works only with --local, without -engine-node, and must be positive"},
		{"engine-hold is no node side", []string{"--local", "-engine-node", "/b.json", "-engine-hold", "5m"}, nil, "-engine-hold works only with --local, without -engine-node"},
		{"engine-hold positive", []string{"--local", "-engine-hold", "0s"}, nil, "-engine-hold works only with --local, without -engine-node, and must be positive"},
		{"unknown engine", []string{"-engine", "k8s"}, nil, `-engine must be ssh, slurm or kubernetes, not "k8s"`},
		{"slurm-job needs engine slurm", []string{"-slurm-job", "4711"}, nil, "-slurm-job works only with -engine slurm"},
		{"deadline needs engine slurm or kubernetes", []string{"-deadline", "5m"}, nil, "-deadline works only with -engine slurm or kubernetes"},
		{"local runs no engine", []string{"--local", "-engine", "slurm"}, nil, "--local verifies this machine; -engine slurm runs verify --local on every node itself"},
		{"engine-node needs local", []string{"-engine-node", "/tmp/b.json"}, nil, "-engine-node works only with --local"},
		{"negative deadline", []string{"-engine", "slurm", "-deadline", "-1m"}, nil, "-deadline, -slurm-start-timeout and -kube-start-timeout must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVerifyArguments(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, argsCmp); d != "" {
				t.Errorf("verifyArguments (-want +got):\n%s", d)
			}
		})
	}
}

// TestParseFactsAndShowArguments parses facts's and show's command lines.
func TestParseFactsAndShowArguments(t *testing.T) {
	conn := connectFlags{parallelism: fleet.DefaultParallelism}
	for _, tc := range []struct {
		name    string
		args    []string
		want    *factsArguments
		wantErr string
	}{
		{"defaults", nil, &factsArguments{Dir: ".", Conn: conn}, ""},
		{"json and targets", []string{"-json", "-target", "gpu001", "d"}, &factsArguments{Dir: "d", Conn: conn, Targets: []string{"gpu001"}, ViewType: viewJSON, json: true}, ""},
		{"root", []string{"--root", "/srv/image", "-probe-timeout", "30s"}, &factsArguments{Dir: ".", Conn: connectFlags{parallelism: fleet.DefaultParallelism, timeouts: timeoutFlags{probe: "30s"}}, Root: "/srv/image"}, ""},
		{"root takes no dir", []string{"--root", "/srv/image", "d"}, nil, "--root probes a root filesystem and takes no spec directory or -target"},
		{"root takes no target", []string{"--root", "/srv/image", "-target", "gpu001"}, nil, "--root probes a root filesystem and takes no spec directory or -target"},
	} {
		t.Run("facts "+tc.name, func(t *testing.T) {
			got, err := parseFactsArguments(tc.args)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, argsCmp); d != "" {
				t.Errorf("factsArguments (-want +got):\n%s", d)
			}
		})
	}
	for _, tc := range []struct {
		name    string
		args    []string
		want    *showArguments
		wantErr string
	}{
		{"plan file", []string{"tf.plan"}, &showArguments{Path: "tf.plan"}, ""},
		{"json", []string{"-json", "tf.plan"}, &showArguments{Path: "tf.plan", ViewType: viewJSON, json: true}, ""},
		{"no file", nil, nil, "show takes one argument, the plan file saved by gpuform plan -out (got 0)"},
		{"two files", []string{"a", "b"}, nil, "show takes one argument, the plan file saved by gpuform plan -out (got 2)"},
	} {
		t.Run("show "+tc.name, func(t *testing.T) {
			got, err := parseShowArguments(tc.args)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, argsCmp); d != "" {
				t.Errorf("showArguments (-want +got):\n%s", d)
			}
		})
	}
}

// TestParseValidateAndLintArguments parses validate's and lint's command
// lines: lint's -format and --min-severity are parsed once, -json is
// -format json, and each bad value gets the error lint has always given.
func TestParseValidateAndLintArguments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    *validateArguments
		wantErr string
	}{
		{"defaults", nil, &validateArguments{Dir: "."}, ""},
		{"json and vars", []string{"-json", "-var", "a=1", "d"}, &validateArguments{Dir: "d", Spec: specFlags{vars: []spec.VarArg{{Value: "a=1"}}}, ViewType: viewJSON, json: true}, ""},
		{"two dirs", []string{"a", "b"}, nil, "accepts at most 1 arg(s), received 2"},
	} {
		t.Run("validate "+tc.name, func(t *testing.T) {
			got, err := parseValidateArguments(tc.args)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, argsCmp); d != "" {
				t.Errorf("validateArguments (-want +got):\n%s", d)
			}
		})
	}
	base := func(f func(a *lintArguments)) *lintArguments {
		a := &lintArguments{Dir: ".", Format: diagview.Text, MinSeverity: lint.Error, format: "text", minSeverity: "error"}
		f(a)
		return a
	}
	for _, tc := range []struct {
		name    string
		args    []string
		want    *lintArguments
		wantErr string
	}{
		{"defaults", nil, base(func(*lintArguments) {}), ""},
		{"json", []string{"-json", "d"}, base(func(a *lintArguments) { a.Dir, a.Format, a.format, a.json = "d", diagview.JSON, "json", true }), ""},
		{"sarif, warnings and a config", []string{"-format", "sarif", "--min-severity", "warning", "--config", "l.hcl"},
			base(func(a *lintArguments) {
				a.Format, a.format, a.MinSeverity, a.minSeverity, a.ConfigPath = diagview.SARIF, "sarif", lint.Warning, "warning", "l.hcl"
			}), ""},
		{"compact info", []string{"-format=compact", "-min-severity=info"}, base(func(a *lintArguments) {
			a.Format, a.format, a.MinSeverity, a.minSeverity = diagview.Compact, "compact", lint.Info, "info"
		}), ""},
		{"json conflicts with sarif", []string{"-json", "-format", "sarif"}, nil, "--json conflicts with --format sarif: give one of them"},
		{"bad format", []string{"-format", "yaml"}, nil, `-format: unknown format "yaml": use one of `},
		{"bad severity", []string{"-min-severity", "fatal"}, nil, `--min-severity must be error, warning or info, not "fatal"`},
	} {
		t.Run("lint "+tc.name, func(t *testing.T) {
			got, err := parseLintArguments(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, argsCmp); d != "" {
				t.Errorf("lintArguments (-want +got):\n%s", d)
			}
		})
	}
}

// TestParseBenchArguments parses bench's command lines: -layers is parsed
// once (comma lists and repeats; none is every layer), -json is -format json, and a bad
// -format, layer or -budget gets the error bench has always given.
func TestParseBenchArguments(t *testing.T) {
	conn := connectFlags{parallelism: fleet.DefaultParallelism}
	base := func(f func(a *benchArguments)) *benchArguments {
		a := &benchArguments{Dir: ".", Conn: conn, Format: "text", Layers: bench.Layers(),
			Engines: engineFlags{Engine: "ssh", SlurmStartTimeout: 5 * time.Minute}}
		f(a)
		return a
	}
	for _, tc := range []struct {
		name    string
		args    []string
		want    *benchArguments
		wantErr string
	}{
		{"defaults", nil, base(func(*benchArguments) {}), ""},
		{"json", []string{"-json", "d"}, base(func(a *benchArguments) { a.Dir, a.Format, a.json = "d", "json", true }), ""},
		{"layers as a list and repeated", []string{"-layers", "hbm,network", "-layers", "storage"},
			base(func(a *benchArguments) {
				a.layers = []string{"hbm,network", "storage"}
				a.Layers = []bench.Layer{bench.LayerHBM, bench.LayerNetwork, bench.LayerStorage}
			}), ""},
		{"outputs and budget", []string{"-out", "r.txt", "-plot", "c.svg", "-budget", "5m", "-verbose", "-target", "gpu001"},
			base(func(a *benchArguments) {
				a.OutPath, a.PlotPath, a.Budget, a.Verbose, a.Targets = "r.txt", "c.svg", 5*time.Minute, true, []string{"gpu001"}
			}), ""},
		{"bad format", []string{"-format", "junit"}, nil, `-format must be text or json, not "junit"`},
		{"json conflicts with another format", []string{"-json", "-format", "text"}, nil, "--json conflicts with --format text: give one of them"},
		{"bad layer", []string{"-layers", "l2cache"}, nil, `-layers: unknown layer "l2cache" (layers: hbm, `},
		{"negative budget", []string{"-budget", "-1m"}, nil, "-budget must be a positive duration, not -1m0s"},
		{"engine slurm in a job", []string{"-engine", "slurm", "-slurm-job", "17", "-deadline", "30m"},
			base(func(a *benchArguments) {
				a.Engines = engineFlags{Engine: "slurm", SlurmJob: "17", SlurmStartTimeout: 5 * time.Minute, Deadline: 30 * time.Minute}
			}), ""},
		{"slurm-partition needs engine slurm", []string{"-slurm-partition", "gpu"}, nil, "-slurm-partition works only with -engine slurm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseBenchArguments(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, argsCmp); d != "" {
				t.Errorf("benchArguments (-want +got):\n%s", d)
			}
		})
	}
}

// checkParse runs one parse case: an error that starts with wantErr, or
// the arguments want, field by field.
func checkParse[A any](t *testing.T, got A, err error, want A, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.HasPrefix(err.Error(), wantErr) {
			t.Fatalf("error %v, want one starting %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got, argsCmp); d != "" {
		t.Errorf("%T (-want +got):\n%s", got, d)
	}
}

// TestParseGraphArguments parses graph's command lines: -format is
// checked before --root's conflicts, each with the error graph has
// always given.
func TestParseGraphArguments(t *testing.T) {
	conn := connectFlags{parallelism: fleet.DefaultParallelism}
	for _, tc := range []struct {
		name    string
		args    []string
		want    *graphArguments
		wantErr string
	}{
		{"defaults", nil, &graphArguments{Dir: ".", Conn: conn, Format: "text"}, ""},
		{"dot to a file, offline", []string{"-format", "dot", "-out", "g.dot", "-offline", "d"}, &graphArguments{Dir: "d", Conn: conn, Format: "dot", OutPath: "g.dot", Offline: true}, ""},
		{"svg of some hosts", []string{"-format=svg", "-target", "gpu[001-002]", "-var", "a=1"},
			&graphArguments{Dir: ".", Conn: conn, Format: "svg", Targets: []string{"gpu[001-002]"}, Spec: specFlags{vars: []spec.VarArg{{Value: "a=1"}}}}, ""},
		{"root", []string{"--root", "/srv/image", "-probe-timeout", "30s"}, &graphArguments{Dir: ".", Conn: connectFlags{parallelism: fleet.DefaultParallelism, timeouts: timeoutFlags{probe: "30s"}}, Root: "/srv/image", Format: "text"}, ""},
		{"bad format", []string{"-format", "jpeg"}, nil, `-format must be text, dot, svg or png, not "jpeg"`},
		{"bad format before root's conflicts", []string{"-format", "jpeg", "--root", "/r", "d"}, nil, `-format must be text, dot, svg or png, not "jpeg"`},
		{"root takes no dir", []string{"--root", "/r", "d"}, nil, "--root draws a root filesystem and takes no spec directory, -target or -offline"},
		{"root takes no target", []string{"--root", "/r", "-target", "gpu001"}, nil, "--root draws a root filesystem and takes no spec directory, -target or -offline"},
		{"root takes no offline", []string{"--root", "/r", "-offline"}, nil, "--root draws a root filesystem and takes no spec directory, -target or -offline"},
		{"two dirs", []string{"a", "b"}, nil, "accepts at most 1 arg(s), received 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseGraphArguments(tc.args)
			checkParse(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestParseLockArguments parses lock's command lines: -images is on
// unless -images=false turns it off.
func TestParseLockArguments(t *testing.T) {
	conn := connectFlags{parallelism: fleet.DefaultParallelism}
	for _, tc := range []struct {
		name    string
		args    []string
		want    *lockArguments
		wantErr string
	}{
		{"defaults", nil, &lockArguments{Dir: ".", Conn: conn, Images: true}, ""},
		{"check upgrade", []string{"-check", "-upgrade", "d"}, &lockArguments{Dir: "d", Conn: conn, Check: true, Upgrade: true, Images: true}, ""},
		{"offline images", []string{"-images=false", "-var-file", "x.gpuvars.hcl", "-probe-timeout", "1m"},
			&lockArguments{Dir: ".", Conn: connectFlags{parallelism: fleet.DefaultParallelism, timeouts: timeoutFlags{probe: "1m"}}, Spec: specFlags{vars: []spec.VarArg{{File: true, Value: "x.gpuvars.hcl"}}}}, ""},
		{"target is not lock's", []string{"-target", "gpu001"}, nil, "unknown flag: --target"},
		{"two dirs", []string{"a", "b"}, nil, "accepts at most 1 arg(s), received 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLockArguments(tc.args)
			checkParse(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestParseImportArguments parses import's command lines: the host's
// flags land in the host, the node block's name is made from the host
// name unless -name gives it, and a range is refused.
func TestParseImportArguments(t *testing.T) {
	conn := connectFlags{parallelism: fleet.DefaultParallelism}
	for _, tc := range []struct {
		name    string
		args    []string
		want    *importArguments
		wantErr string
	}{
		{"host", []string{"gpu001.dc1.example.com"}, &importArguments{Host: spec.Host{Name: "gpu001.dc1.example.com"}, Conn: conn, Name: "gpu001"}, ""},
		{"sim host", []string{"sim://hgx-h100-stale/n1"}, &importArguments{Host: spec.Host{Name: "sim://hgx-h100-stale/n1"}, Conn: conn, Name: "hgx-h100-stale-n1"}, ""},
		{"host flags, name and out", []string{"-user", "ops", "-port", "2222", "-jump", "bastion", "-become", "sudo", "-name", "dgx", "-out", "dgx.gpuform.hcl", "10.0.0.7"},
			&importArguments{Host: spec.Host{Name: "10.0.0.7", User: "ops", Port: 2222, Jump: "bastion", Become: "sudo"}, Conn: conn, Name: "dgx", OutPath: "dgx.gpuform.hcl"}, ""},
		{"a range", []string{"gpu[001-002]"}, nil, `import takes one host name, not "gpu[001-002]"`},
		{"no host", nil, nil, "accepts 1 arg(s), received 0"},
		{"bad port", []string{"-port", "ssh", "h"}, nil, `invalid argument "ssh" for "--port" flag`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseImportArguments(tc.args)
			checkParse(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestParseFmtArguments parses fmt's command lines: -list and -write are
// on unless turned off, and "-" (standard input) is a path.
func TestParseFmtArguments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    *fmtArguments
		wantErr string
	}{
		{"defaults", nil, &fmtArguments{Path: ".", List: true, Write: true}, ""},
		{"standard input", []string{"-"}, &fmtArguments{Path: "-", List: true, Write: true}, ""},
		{"check, diff, recursive", []string{"-check", "-diff", "-recursive", "specs"}, &fmtArguments{Path: "specs", Check: true, Diff: true, Recursive: true, List: true, Write: true}, ""},
		{"no list, no write", []string{"-list=false", "-write=false", "a.gpuform.hcl"}, &fmtArguments{Path: "a.gpuform.hcl"}, ""},
		{"two paths", []string{"a", "b"}, nil, "accepts at most 1 arg(s), received 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFmtArguments(tc.args)
			checkParse(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestParseAlertsArguments parses alerts's command lines: -check-for
// below a minute or a negative -for gets the error alerts has always
// given.
func TestParseAlertsArguments(t *testing.T) {
	defaults := alerts.Options{CheckFailingFor: 15 * time.Minute, For: 5 * time.Minute}
	for _, tc := range []struct {
		name    string
		args    []string
		want    *alertsArguments
		wantErr string
	}{
		{"defaults", nil, &alertsArguments{Dir: ".", Options: defaults}, ""},
		{"durations and out", []string{"-check-for", "1m", "-for", "0s", "-out", "rules.yml", "d"},
			&alertsArguments{Dir: "d", OutPath: "rules.yml", Options: alerts.Options{CheckFailingFor: time.Minute}}, ""},
		{"vars", []string{"-var", "a=1"}, &alertsArguments{Dir: ".", Spec: specFlags{vars: []spec.VarArg{{Value: "a=1"}}}, Options: defaults}, ""},
		{"check-for below a minute", []string{"-check-for", "59s"}, nil, "-check-for must be at least 1m and -for not negative"},
		{"negative for", []string{"-for", "-1s"}, nil, "-check-for must be at least 1m and -for not negative"},
		{"bad duration", []string{"-for", "soon"}, nil, `invalid argument "soon" for "--for" flag`},
		{"two dirs", []string{"a", "b"}, nil, "accepts at most 1 arg(s), received 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAlertsArguments(tc.args)
			checkParse(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestParseBindArguments parses bind's command lines: the flags stop at
// the command's name, -gpu is the local rank's (-1) unless given, a
// negative one is left for the work to refuse, and -node needs -spec.
func TestParseBindArguments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    *bindArguments
		wantErr string
	}{
		{"recorded binding", []string{"--", "python", "train.py"}, &bindArguments{BindingFile: bind.File, GPU: -1, Command: []string{"python", "train.py"}}, ""},
		{"flags stop at the command", []string{"-v", "sh", "-c", "exit 3", "-v"}, &bindArguments{BindingFile: bind.File, GPU: -1, Verbose: true, Command: []string{"sh", "-c", "exit 3", "-v"}}, ""},
		{"gpu 0 is given", []string{"-gpu", "0", "--", "true"}, &bindArguments{BindingFile: bind.File, GPU: 0, gpuGiven: true, Command: []string{"true"}}, ""},
		{"negative gpu is the work's to refuse", []string{"-gpu", "-2", "true"}, &bindArguments{BindingFile: bind.File, GPU: -2, gpu: -2, gpuGiven: true, Command: []string{"true"}}, ""},
		{"spec, node, binding file, cuda", []string{"-spec", "d", "-node", "gpu", "-var", "a=1", "-binding", "b.json", "-cuda-visible-devices", "--", "./app"},
			&bindArguments{SpecDir: "d", Node: "gpu", Spec: specFlags{vars: []spec.VarArg{{Value: "a=1"}}}, BindingFile: "b.json", GPU: -1, CUDAVisibleDevices: true, Command: []string{"./app"}}, ""},
		{"node needs spec", []string{"-node", "gpu", "--", "true"}, nil, "-node works only with -spec: the recorded binding is this node's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseBindArguments(tc.args)
			checkParse(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestParseVersionArguments parses version's command lines.
func TestParseVersionArguments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    *versionArguments
		wantErr string
	}{
		{"human", nil, &versionArguments{}, ""},
		{"json", []string{"-json"}, &versionArguments{ViewType: viewJSON, json: true}, ""},
		{"no arguments", []string{"extra"}, nil, `unknown command "extra" for "gpuform version"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVersionArguments(tc.args)
			checkParse(t, got, err, tc.want, tc.wantErr)
		})
	}
}
