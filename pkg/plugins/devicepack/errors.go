package devicepack

import "errors"

var errEmptyStatic = errors.New("the Static workload has no class")
