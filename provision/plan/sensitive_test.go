package plan

import (
	"testing"

	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// A sensitive container setting hides every attribute of the resource it
// ends up in, as a sensitive driver version hides the driver package's.
func TestSensitiveContainerSettings(t *testing.T) {
	secret := spec.Attr[string]{V: "/raid/secret", Set: true, Sensitive: true}
	for name, tc := range map[string]struct {
		c    spec.Container
		want string
	}{
		"enroot path":       {spec.Container{Runtime: spec.Attr[string]{V: "enroot", Set: true}, EnrootCachePath: secret}, resource.EnrootConf},
		"apptainer mount":   {spec.Container{Runtime: spec.Attr[string]{V: "apptainer", Set: true}, Apptainer: spec.ApptainerSettings{MountDev: spec.Attr[string]{V: "minimal", Set: true, Sensitive: true}}}, resource.ApptainerConf},
		"image directory":   {spec.Container{Runtime: spec.Attr[string]{V: "enroot", Set: true}, ImageDir: secret}, resource.ContainerImages},
		"apptainer version": {spec.Container{Runtime: spec.Attr[string]{V: "apptainer", Set: true}, ApptainerVersion: spec.Attr[spec.Version]{Set: true, Sensitive: true}}, resource.ApptainerPackage},
	} {
		t.Run(name, func(t *testing.T) {
			c := tc.c
			got := sensitiveAttrs(&spec.Node{Container: &c})
			if !got[tc.want][allAttrs] {
				t.Errorf("%s is not hidden: %v", tc.want, got)
			}
		})
	}
}
