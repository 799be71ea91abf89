package resource

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/facts"
)

// EnrootConfFile is gpuform's enroot.conf drop-in. enroot reads every
// *.conf of enroot.conf.d after enroot.conf, in name order, in the same
// "KEY value" format (NVIDIA/enroot doc/configuration.md and
// conf/enroot.conf.d/README at 8ea147d337da60cb1c557140f3a85cdf0d620968),
// so the operator's enroot.conf stays theirs.
const EnrootConfFile = "/etc/enroot/enroot.conf.d/90-gpuform.conf"

// enrootPathPattern is the spec's pattern again: enroot expands its config
// values in a shell, so only a path, $(id -u|-g) and ${USER|UID} pass.
var enrootPathPattern = lazyre.New(`^/([A-Za-z0-9._+@/\-]|\$\(id -[ug]\)|\$\{(USER|UID)\})*$`)

// enrootConfReads declares what enroot_conf reads back on a node: the
// pending marker of an interrupted write (in pendingDir) and its
// enroot.conf.d drop-in.
func enrootConfReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{EnrootConfFile}, ManagedDirs: []string{pendingDir}}
}

// buildEnrootConf writes the enroot settings of the container block; a
// drop-in an earlier apply wrote is removed when the spec has none.
func buildEnrootConf(in *buildInput) ([]Resource, []string, error) {
	c := in.n.Container
	if c == nil || c.Runtime.V != "enroot" || !c.EnrootCachePath.Set && !c.EnrootDataPath.Set && !c.EnrootRestrictDev.Set {
		return []Resource{absentFile(EnrootConf, EnrootConfFile)}, nil, nil
	}
	want := map[string]string{}
	var keys []string
	for _, kv := range []struct {
		key string
		set bool
		val string
	}{
		{"ENROOT_CACHE_PATH", c.EnrootCachePath.Set, c.EnrootCachePath.V},
		{"ENROOT_DATA_PATH", c.EnrootDataPath.Set, c.EnrootDataPath.V},
		{"ENROOT_RESTRICT_DEV", c.EnrootRestrictDev.Set, map[bool]string{true: "yes", false: "no"}[c.EnrootRestrictDev.V]},
	} {
		if !kv.set {
			continue
		}
		if kv.key != "ENROOT_RESTRICT_DEV" {
			if err := check(enrootPathPattern, strings.ToLower(kv.key), kv.val); err != nil {
				return nil, nil, err
			}
		}
		want[kv.key] = kv.val
		keys = append(keys, kv.key)
	}
	var b strings.Builder
	b.WriteString(header(in.n))
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s\n", k, want[k])
	}
	return []Resource{&fileResource{
		base:    base{name: EnrootConf, deps: optional(c.EnrootVersion.Set, EnrootPackage)},
		path:    EnrootConfFile,
		content: b.String(),
		current: managedFile(EnrootConfFile),
		attrs: textAttrs(func(_ *facts.Node, cur string, _ bool) map[string]string {
			return enrootSettings(cur)
		}),
		desired: stringVals(want),
	}}, nil, nil
}

// enrootSettings reads "KEY value" lines, as enroot does, skipping comments.
func enrootSettings(content string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		out[k] = strings.TrimSpace(v)
	}
	return out
}
