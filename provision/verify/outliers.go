package verify

import (
	"github.com/gpuform/gpuform/provision/outlier"
	"github.com/gpuform/gpuform/spec"
)

// OutlierSettings reads a node block's verify { outliers,
// outlier_margin_percent }: the mode (unset is warn) and the margin as a
// fraction (unset is outlier.DefaultMargin). Verify and bench compare
// peers with the same setting, so one spec line tunes both.
func OutlierSettings(n *spec.Node) (spec.Outliers, float64) {
	mode, margin := spec.OutliersWarn, outlier.DefaultMargin
	if n == nil {
		return mode, margin
	}
	if v := n.Verify; v != nil {
		if v.Outliers.Set {
			mode = v.Outliers.V
		}
		if v.OutlierMarginPercent.Set {
			margin = v.OutlierMarginPercent.V / 100
		}
	}
	return mode, margin
}
