package backend

import "github.com/zkchaos/zkchaos/cluster/local"

// redis is a single Redis server (Debian's redis-server), on the local
// backend.
type redis struct{}

func init() { RegisterService(redis{}, 1) }

func (redis) Name() string           { return Redis }
func (redis) Program() local.Program { return local.Redis{} }

// Preflight finds redis-server: missing, the run is refused before it
// starts.
func (redis) Preflight() error { return local.Redis{}.Check() }

// Recipe is the service's single-server lock.
func (redis) Recipe() string { return "redis-lock" }
