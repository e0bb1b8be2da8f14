package backend

import "github.com/zkchaos/zkchaos/cluster/local"

// etcd is a single etcd server (Debian's etcd-server), on the local
// backend.
type etcd struct{}

func init() { RegisterService(etcd{}, 2) }

func (etcd) Name() string           { return Etcd }
func (etcd) Program() local.Program { return local.Etcd{} }

// Preflight finds etcd: missing, the run is refused before it starts.
func (etcd) Preflight() error { return local.Etcd{}.Check() }

// Recipe is the service's mutex.
func (etcd) Recipe() string { return "etcd-mutex" }
