package plots

import (
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/observe/resources"
)

// TestResourcesPastHistoryEnd: samples taken after the history's last
// event (a soak killed while its workers were still starting) are drawn,
// the clock running to the last sample.
func TestResourcesPastHistoryEnd(t *testing.T) {
	var ss []resources.Sample
	for i := range 3 {
		ss = append(ss, resources.Sample{TimeNS: int64(i+1) * 1e9,
			Procs: []resources.Proc{{Role: resources.RoleController, RSS: uint64(30+i) << 20}}})
	}
	f, err := Resources(lockview.View{End: 5e8}, ss, ControllerRSS)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Caption, "3 resource samples") {
		t.Errorf("caption %q: want all 3 samples drawn", f.Caption)
	}
}
