package external

import (
	"testing"

	"github.com/zkchaos/zkchaos/internal/chaostest"
)

func TestMain(m *testing.M) { chaostest.Main(m) }
