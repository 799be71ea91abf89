package kb

import "io/fs"

// KB is the parsed knowledge base. It is built by Load and never changed
// afterwards, so one KB may be shared by any number of goroutines. Slices in
// the answers it returns (Fact.Sources, build lists) share its storage and
// must not be modified.
type KB struct {
	fsys     fs.FS // the data files the KB was loaded from
	cuda     []CUDARelease
	mvc      map[int]MVCRange
	branches map[int]Branch
	archs    []Architecture
	gpus     []GPUModel
	aliases  map[string][]int // normalised alias → indexes into gpus
	nccl     []NCCLRelease
	ngc      map[string]NGCImage // image reference → image
	toolkit  []ToolkitRelease
	features map[string]ToolkitFeature
	runtimes []RuntimeConfig
	dcgm     []DCGMRequirement
	packages []packageRow
	// auxPackages are the packages.tsv rows of packages that travel
	// with a component but are none themselves (IMEX, with the driver).
	auxPackages []packageRow
	facts       map[string]HostFact
	nccltest    []NCCLThreshold
	floors      []NCCLFloor
	installed   []InstalledPackage
	packageSets []packageSetRow
	pciIDs      map[string]GPUDevice // PCI device ID → model
	hostDesigns []HostDesign
	hbm         map[string]MemoryBandwidth // gpu-models.tsv model → HBM bandwidth
	pcie        map[int]PCIeRate           // PCIe generation → link rate
	remedies    map[string]Remedy          // "kind/code" → row of remediation.tsv
	remedyOrder []string
	subcodes    []xidSubcode // xid-subcodes.tsv: Xids 144-150 by subcode
	advisories  []DriverAdvisory
	// nvlinkDomains are nvlink-domains.tsv's rack-scale platforms.
	nvlinkDomains []NVLinkDomainPlatform
}

// Load parses every embedded table (about 14 ms). An error names the data
// file and line of the first row that does not parse; the tables are part
// of the binary, so an error is a bug in gpuform, caught by the package
// tests. There is no shared instance: the CLI loads once per run and hands
// the result down (cmd/gpuform, Streams.KB).
func Load() (*KB, error) { return load(dataFS) }

// load parses the tables of fsys, laid out as data/*.tsv; tests pass
// corrupted copies to check that errors name the file and line.
func load(fsys fs.FS) (*KB, error) {
	kb := &KB{
		fsys:     fsys,
		mvc:      map[int]MVCRange{},
		branches: map[int]Branch{},
		aliases:  map[string][]int{},
		ngc:      map[string]NGCImage{},
		features: map[string]ToolkitFeature{},
		facts:    map[string]HostFact{},
	}
	for _, load := range []func() error{
		kb.loadCUDA,
		kb.loadBranches,
		kb.loadArchitectures,
		kb.loadGPUs,
		kb.loadNCCL,
		kb.loadNGC,
		kb.loadToolkit,
		kb.loadDCGM,
		kb.loadPackages,
		kb.loadFacts,
		kb.loadFloors,
		kb.loadInstalled,
		kb.loadPackageSets,
		kb.loadPCIIDs,
		kb.loadHostDesigns,
		kb.loadBandwidth,
		kb.loadRemedies,
		kb.loadSubcodes,
		kb.loadDriverAdvisories,
		kb.loadNVLinkDomains,
	} {
		if err := load(); err != nil {
			return nil, err
		}
	}
	return kb, nil
}
