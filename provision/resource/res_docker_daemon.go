package resource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// nvidiaRuntimePath is what nvidia-ctk runtime configure registers as the
// nvidia runtime's path in daemon.json.
const nvidiaRuntimePath = "nvidia-container-runtime"

// dockerDaemonReads declares what docker_daemon reads back on a node: the
// daemon.json it edits key by key, the pending marker an interrupted restart
// leaves, and docker.service it restarts.
func dockerDaemonReads() facts.Reads {
	return facts.Reads{ConfigFiles: []string{DaemonJSON}, ManagedDirs: []string{"/etc/gpuform"}, Units: []string{"docker.service"}}
}

// buildDockerDaemon configures Docker for the NVIDIA runtime and the
// container defaults. A containerd node gets containerd_config instead, an
// enroot node enroot_conf, an Apptainer node apptainer_conf; the defaults
// are Docker's alone and are left out with a warning.
func buildDockerDaemon(in *buildInput) ([]Resource, []string, error) {
	rs, warnings, err := buildDockerDaemonWanted(in)
	if err != nil || len(rs) > 0 || !in.n.Owner.Claims() {
		return rs, warnings, err
	}
	// The spec sets nothing in daemon.json any more: the keys recorded
	// under it there go, and only they.
	share := shareOf(in.n.Owner, in.f, DockerDaemon, daemonKeys(in.f))
	if len(share.drop(nil)) > 0 {
		rs = []Resource{&dockerResource{base: base{name: DockerDaemon}, c: &spec.Container{}, owner: in.n.Owner}}
	}
	return rs, warnings, nil
}

// daemonKeys are the keys of daemon.json a spec may own, sorted: those
// gpuform reads and writes (see dockerResource.actual).
func daemonKeys(f *facts.Node) []string {
	if !f.Docker.Present || f.Docker.Error != "" {
		return nil
	}
	return slices.Sorted(maps.Keys((&dockerResource{}).actual(f.Docker.Daemon)))
}

func buildDockerDaemonWanted(in *buildInput) ([]Resource, []string, error) {
	c := in.n.Container
	if c == nil {
		return nil, nil, nil
	}
	if rt := c.Runtime.V; rt == "containerd" || rt == "enroot" || rt == "apptainer" {
		// ulimits are not lost on any of them: the limits resource writes
		// them to the host's pam_limits file, which jobs (and enroot's and
		// Apptainer's containers, ordinary processes of the job) inherit.
		// default_shm_size has no runtime-wide equivalent: a pod sets its
		// own, enroot binds the host's /dev/shm, Apptainer too unless its
		// /dev is minimal (then a tmpfs of the kernel's default size).
		switch {
		case rt == "containerd" && (c.DefaultShmSize.Set || len(c.Ulimits) > 0):
			return nil, []string{"container runtime containerd: default_shm_size and ulimits are Docker daemon settings with no containerd equivalent and are not applied to containers (ulimits still go to the host's " + LimitsFile + "); set them in the pod or container spec"}, nil
		case c.DefaultShmSize.Set:
			return nil, []string{"container runtime " + rt + ": default_shm_size is a Docker daemon setting and is not applied; " + rt + "'s containers use the host's /dev/shm: size it with shm { size }"}, nil
		}
		return nil, nil, nil
	}
	r := dockerDaemon(c)
	if r == nil {
		return nil, nil, nil
	}
	r.owner = in.n.Owner
	if c.NvidiaContainerToolkit.Set {
		r.deps = []string{ContainerToolkit}
	}
	var warnings []string
	if c.CDI.V {
		var w string
		r.cdi, w = dockerCDIMode(in.kb, in.f)
		if w != "" {
			warnings = append(warnings, w)
		}
	}
	return []Resource{r}, warnings, nil
}

// cdiMode is what docker_daemon does with daemon.json's features.cdi for
// cdi = true.
type cdiMode int

const (
	// cdiNone leaves it alone: CDI not asked for, or a Docker without it.
	cdiNone cdiMode = iota
	// cdiSet sets it to true: Docker 25.0 to 28.1 inject CDI devices only
	// with it, or the version is not known.
	cdiSet
	// cdiNotOff turns a false back to true and otherwise adds nothing:
	// Docker 28.2 and later have CDI on by default.
	cdiNotOff
)

// dockerPackages are the packages that install dockerd: Docker's own
// repository, Debian and Ubuntu, Fedora.
func dockerPackages() []string { return []string{"docker-ce", "docker.io", "moby-engine"} }

// dockerEngineVersion reads the installed Docker Engine release from its
// package ("5:28.1.1-1~ubuntu.24.04~noble", "26.1.5+dfsg1-9"); ok is
// false when no package says.
func dockerEngineVersion(f *facts.Node) (v kb.Version, pkg string, ok bool) {
	for _, name := range dockerPackages() {
		raw, ok := f.Package(name)
		if !ok {
			continue
		}
		if _, after, cut := strings.Cut(raw, ":"); cut {
			raw = after
		}
		m := dockerVersionRE.FindString(raw)
		if v, err := kb.ParseVersion(m); m != "" && err == nil {
			return v, name, true
		}
	}
	return kb.Version{}, "", false
}

var dockerVersionRE = lazyre.New(`^\d+\.\d+(\.\d+)?`)

// dockerCDIMode decides features.cdi from the node's Docker release and
// the knowledge base's docker-cdi-since and docker-cdi-default facts.
func dockerCDIMode(k *kb.KB, f *facts.Node) (cdiMode, string) {
	since, ok1 := k.HostFact("docker-cdi-since")
	def, ok2 := k.HostFact("docker-cdi-default")
	sinceV, err1 := kb.ParseVersion(since.Value)
	defV, err2 := kb.ParseVersion(def.Value)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return cdiSet, ""
	}
	v, pkg, ok := dockerEngineVersion(f)
	switch {
	case !ok:
		return cdiSet, fmt.Sprintf("%s: cdi = true: the node's Docker release is not known (none of %s is installed), so gpuform sets \"features\": {\"cdi\": true} in %s: Docker %s to before %s needs it for docker run --device nvidia.com/gpu=all, later releases have CDI on by default and read it the same way, and releases before %s have no CDI", DockerDaemon, strings.Join(dockerPackages(), ", "), DaemonJSON, sinceV, defV, sinceV)
	case v.Compare(sinceV) < 0:
		return cdiNone, fmt.Sprintf("%s: cdi = true: Docker %s (%s) has no CDI support (from %s), so docker run --device nvidia.com/gpu=... fails on it; gpuform does not set features.cdi: upgrade Docker, or use --gpus/the nvidia runtime", DockerDaemon, v, pkg, sinceV)
	case v.Compare(defV) >= 0:
		return cdiNotOff, ""
	}
	return cdiSet, ""
}

// dockerResource merges the NVIDIA runtime and the container defaults into
// /etc/docker/daemon.json, keeping every other key the operator set, and
// restarts Docker if it is running.
type dockerResource struct {
	base
	c *spec.Container
	// cdi is what to do with features.cdi (cdi = true).
	cdi cdiMode
	// owner is the spec's: other specs may own other keys of daemon.json
	// (see keyShare).
	owner spec.Owner
}

func dockerDaemon(c *spec.Container) *dockerResource {
	if !c.DefaultRuntime.Set && !c.DefaultShmSize.Set && len(c.Ulimits) == 0 && !c.NvidiaContainerToolkit.Set && !c.CDI.V {
		return nil
	}
	return &dockerResource{base: base{name: DockerDaemon}, c: c}
}

// dockerSize renders bytes the way Docker's go-units parses them, binary
// single-letter units ("16G"), the form nvidia and Docker docs use.
func dockerSize(n uint64) string {
	for _, u := range []struct {
		s string
		m uint64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return strconv.FormatUint(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatUint(n, 10)
}

func (r *dockerResource) wanted() map[string]string {
	w := map[string]string{}
	if r.c.NvidiaContainerToolkit.Set || r.c.DefaultRuntime.V {
		w["runtimes.nvidia"] = nvidiaRuntimePath
	}
	if r.c.DefaultRuntime.Set {
		if r.c.DefaultRuntime.V {
			w["default-runtime"] = "nvidia"
		}
	}
	if r.c.DefaultShmSize.Set {
		w["default-shm-size"] = dockerSize(r.c.DefaultShmSize.V.Bytes)
	}
	for _, k := range slices.Sorted(maps.Keys(r.c.Ulimits)) {
		w["default-ulimits."+k] = ulimitText(r.c.Ulimits[k].V)
	}
	return w
}

func ulimitText(s spec.Size) string {
	if s.Unlimited {
		return "-1"
	}
	return strconv.FormatUint(s.Bytes, 10)
}

// actual reads the same attributes from daemon.json.
func (r *dockerResource) actual(d map[string]any) map[string]string {
	out := map[string]string{}
	if rt, ok := d["runtimes"].(map[string]any); ok {
		if nv, ok := rt["nvidia"].(map[string]any); ok {
			if p, ok := nv["path"].(string); ok {
				out["runtimes.nvidia"] = p
			}
		}
	}
	if s, ok := d["default-runtime"].(string); ok {
		out["default-runtime"] = s
	}
	if s, ok := d["default-shm-size"].(string); ok {
		out["default-shm-size"] = s
		if sz, err := spec.ParseSize(s); err == nil && !sz.IsPercent() && !sz.Unlimited {
			// "16GiB" and "16G" are the same size to Docker.
			out["default-shm-size"] = dockerSize(sz.Bytes)
		}
	}
	if ft, ok := d["features"].(map[string]any); ok {
		if v, ok := ft["cdi"]; ok {
			out["features.cdi"] = fmt.Sprint(v)
		}
	}
	if ul, ok := d["default-ulimits"].(map[string]any); ok {
		for name, v := range ul {
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			soft, hard := fmt.Sprint(m["Soft"]), fmt.Sprint(m["Hard"])
			if soft == hard {
				out["default-ulimits."+name] = soft
			} else {
				out["default-ulimits."+name] = soft + "/" + hard
			}
		}
	}
	return out
}

func (r *dockerResource) Diff(n *facts.Node) (Change, error) {
	d := n.Docker
	if d.Present && d.Error != "" {
		return Change{}, fmt.Errorf("%s: %s is not a JSON object (%s); gpuform will not rewrite a file it cannot read: fix it, then plan again", r.name, DaemonJSON, d.Error)
	}
	want := r.wanted()
	act := r.actual(d.Daemon)
	if r.cdi == cdiSet || r.cdi == cdiNotOff && act["features.cdi"] != "" && act["features.cdi"] != "true" {
		want["features.cdi"] = "true"
	}
	fileKeys := slices.Sorted(maps.Keys(act))
	share := shareOf(r.owner, n, DockerDaemon, fileKeys)
	drop := share.drop(want)
	var before map[string]string
	if d.Present {
		before = map[string]string{}
		// Show only the keys the spec sets or removes; the others are
		// kept as they are.
		for k := range want {
			if v, ok := act[k]; ok {
				before[k] = v
			}
		}
		for _, k := range drop {
			if v, ok := act[k]; ok {
				before[k] = v
			}
		}
	}
	if len(want) == 0 && len(drop) == 0 {
		before, want = nil, nil
	}
	beforeVals, afterVals := stringVals(before), stringVals(want)
	// An earlier apply that wrote daemon.json was cut off before Docker
	// restarted (its marker is still there): restart it now.
	if _, pending := n.ManagedFile(PendingMarker(DaemonJSON)); pending && n.Unit("docker.service").Enabled != "not-found" {
		beforeVals, afterVals = copyAttrs(beforeVals), copyAttrs(afterVals)
		beforeVals["in effect"], afterVals["in effect"] = StringVal("false"), StringVal("true")
	}
	c := r.change(beforeVals, afterVals)
	c.Path = DaemonJSON
	c.Keys = share.keyedFile(r.wanted(), fileKeys)
	if c.Keys != nil && want["features.cdi"] == "true" && !slices.Contains(c.Keys.Declared, "features.cdi") {
		c.Keys.Declared = append(c.Keys.Declared, "features.cdi")
		slices.Sort(c.Keys.Declared)
	}
	if c.Action == NoOp {
		return c, nil
	}
	merged, err := r.merge(d.Daemon, want["features.cdi"] == "true", drop)
	if err != nil {
		return Change{}, err
	}
	// Docker reads daemon.json only at start, and whether the running
	// daemon uses it cannot be probed, so the write and the restart are one
	// step: a failed restart restores the old file.
	desc, then := "write "+DaemonJSON, effect{}
	if n.Unit("docker.service").Enabled != "not-found" {
		desc, then = desc+" and restart docker.service if it is running", tryRestart("docker.service")
		c.Restarts = []string{"docker.service"}
	}
	s, err := fileWrite{desc: desc, path: DaemonJSON, content: merged, cur: currentFile(n, DaemonJSON), then: then}.step()
	if err != nil {
		return Change{}, err
	}
	c.Steps = []Step{s}
	return c, nil
}

// merge sets gpuform's keys in a copy of daemon.json and renders it. Keys
// it does not manage, and sibling entries of the maps it edits (other
// runtimes, other ulimits), are kept; numbers keep their text.
//
// The keys of drop (recorded under this spec, no longer declared) are
// removed, and a map left empty with them; the nvidia runtime stays while
// daemon.json still makes it the default, since Docker will not start
// with a default runtime it does not have.
func (r *dockerResource) merge(cur map[string]any, cdi bool, drop []string) (string, error) {
	out := map[string]any{}
	for k, v := range cur {
		out[k] = v
	}
	subMap := func(key string) map[string]any {
		m := map[string]any{}
		if old, ok := out[key].(map[string]any); ok {
			for k, v := range old {
				m[k] = v
			}
		}
		out[key] = m
		return m
	}
	if r.c.NvidiaContainerToolkit.Set || r.c.DefaultRuntime.V {
		rt := subMap("runtimes")
		nv := map[string]any{}
		if old, ok := rt["nvidia"].(map[string]any); ok {
			for k, v := range old {
				nv[k] = v
			}
		}
		nv["path"] = nvidiaRuntimePath
		if _, ok := nv["args"]; !ok {
			nv["args"] = []any{}
		}
		rt["nvidia"] = nv
	}
	if r.c.DefaultRuntime.Set {
		if r.c.DefaultRuntime.V {
			out["default-runtime"] = "nvidia"
		} else if out["default-runtime"] == "nvidia" {
			delete(out, "default-runtime")
		}
	}
	if r.c.DefaultShmSize.Set {
		out["default-shm-size"] = dockerSize(r.c.DefaultShmSize.V.Bytes)
	}
	if cdi {
		// Other features (containerd-snapshotter, ...) are kept.
		subMap("features")["cdi"] = true
	}
	if len(r.c.Ulimits) > 0 {
		ul := subMap("default-ulimits")
		for name, a := range r.c.Ulimits {
			v := json.Number(ulimitText(a.V))
			ul[name] = map[string]any{"Name": name, "Soft": v, "Hard": v}
		}
	}
	unset := func(key, sub string) {
		m, ok := out[key].(map[string]any)
		if !ok {
			return
		}
		m = maps.Clone(m)
		delete(m, sub)
		if len(m) == 0 {
			delete(out, key)
		} else {
			out[key] = m
		}
	}
	for _, k := range drop {
		switch {
		case k == "runtimes.nvidia":
			if out["default-runtime"] != "nvidia" {
				unset("runtimes", "nvidia")
			}
		case k == "default-runtime":
			if out["default-runtime"] == "nvidia" {
				delete(out, "default-runtime")
			}
		case k == "default-shm-size":
			delete(out, k)
		case k == "features.cdi":
			unset("features", "cdi")
		case strings.HasPrefix(k, "default-ulimits."):
			unset("default-ulimits", strings.TrimPrefix(k, "default-ulimits."))
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	if err := enc.Encode(out); err != nil {
		return "", fmt.Errorf("%s: render %s: %w", r.name, DaemonJSON, err)
	}
	return strings.TrimRight(buf.String(), "\n") + "\n", nil
}
