package plots

import (
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

func lockviewOps(h []history.Event) []lockview.Op { return lockview.Of(h).Ops }
