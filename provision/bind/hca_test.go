package bind

import "testing"

func TestHCAFilterSelects(t *testing.T) {
	tests := map[string]struct {
		value string
		dev   string
		want  bool
	}{
		"exact match":         {"=mlx5_1", "mlx5_1", true},
		"exact, not a prefix": {"=mlx5_1", "mlx5_10", false},
		// Without "=" NCCL matches prefixes: the trap "=" avoids.
		"prefix selects more":   {"mlx5_1", "mlx5_10", true},
		"port dropped":          {"mlx5_0:1,mlx5_3:1", "mlx5_3", true},
		"not listed":            {"mlx5_0,mlx5_3", "mlx5_4", false},
		"excluded":              {"^mlx5_0", "mlx5_0", false},
		"exclusion lets others": {"^=mlx5_0", "mlx5_1", true},
		"empty selects none":    {"", "mlx5_0", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ParseHCA(tc.value).Selects(tc.dev); got != tc.want {
				t.Errorf("NCCL_IB_HCA=%q selects %s: %v, want %v", tc.value, tc.dev, got, tc.want)
			}
		})
	}
}
