module github.com/zkchaos/zkchaos

go 1.26.8

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/google/uuid v1.6.0
)
