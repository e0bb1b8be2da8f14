package deaths

import (
	"testing"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

func TestMain(m *testing.M) { chaostest.Main(m) }
