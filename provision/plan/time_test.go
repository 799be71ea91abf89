package plan_test

import "time"

func p2time() time.Time { return time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC) }
