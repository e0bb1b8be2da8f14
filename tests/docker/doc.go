// Package docker holds the integration tests of the docker backend
// (`chaos run --cluster docker`): bad input refused before anything
// starts, the same verdicts as the local backend (fenced valid, unfenced
// caught), the server faults verified inside the containers, and a
// controller killed mid-fault leaving no container, network, namespace,
// rule or paused process. They skip, saying why, where no Docker engine
// answers or the image is not built (make test builds it).
package docker
