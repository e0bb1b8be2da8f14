package backend

import "github.com/zkchaos/zkchaos/cluster/local"

// zooKeeper is the default service, the one every backend runs.
type zooKeeper struct{}

func init() { RegisterService(zooKeeper{}, 0) }

func (zooKeeper) Name() string           { return ZooKeeper }
func (zooKeeper) Program() local.Program { return local.ZooKeeper{} }

// Preflight asks nothing: each backend finds what its servers need (the
// local one Java and ZooKeeper's jars, in its own preflight).
func (zooKeeper) Preflight() error { return nil }

// Recipe keeps the caller's default (the seed).
func (zooKeeper) Recipe() string { return "" }
