package resource

import "github.com/gpuform/gpuform/provision/facts"

// apptainerPackageReads declares what apptainer_package reads back on a
// node: nothing beyond the node facts every resource shares (packages,
// devices).
func apptainerPackageReads() facts.Reads { return facts.Reads{} }

// buildApptainerPackage installs Apptainer at the spec's release and holds
// it.
func buildApptainerPackage(in *buildInput) ([]Resource, []string, error) {
	c := in.n.Container
	if c == nil || c.Runtime.V != "apptainer" || !c.ApptainerVersion.Set {
		return nil, nil, nil
	}
	s := resolveSeries(apptainerSet(in.kb, in.family, c.ApptainerVersion.V.Raw), in.f, func(v string) pkgSet { return apptainerSet(in.kb, in.family, v) })
	return []Resource{&pkgResource{base: base{name: ApptainerPackage}, family: in.family, set: s,
		notOffered: "apptainer " + s.want + " is in no repository this node uses. The Apptainer project publishes its packages as release files (https://github.com/apptainer/apptainer/releases/tag/v" + s.want + "): put them in a repository this node uses (a site mirror), then apply again"}}, nil, nil
}
