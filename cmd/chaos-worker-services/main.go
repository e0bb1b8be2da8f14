// Command chaos-worker-services is the built-in worker with the lock
// recipes of the services other than ZooKeeper (client/recipes/leased:
// Redis and etcd) linked in as well as ZooKeeper's. Nobody starts it by
// name: chaos-worker hands a worker of such a service over to it, in the
// same process, so that chaos-worker's own start does without the etcd,
// gRPC and Redis clients' initialisation. Its command line is
// chaos-worker's (cmd/internal/workercmd).
package main

import (
	_ "github.com/zkchaos/zkchaos/client/recipes/leased" // the recipes of Redis and etcd
	"github.com/zkchaos/zkchaos/cmd/internal/workercmd"
)

func main() { workercmd.Main() }
