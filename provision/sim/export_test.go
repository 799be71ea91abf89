package sim

// ApplyFaults lets the tests apply a fault description no shipped profile
// carries to a materialised root.
var ApplyFaults = applyFaults
