package backend

import (
	"fmt"
	"strings"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// The lock services (--service): the ZooKeeper ensemble, and the other
// services a run may test locks on instead.
const (
	ZooKeeper = cluster.ZooKeeper
	Redis     = cluster.Redis
	Etcd      = cluster.Etcd
)

// Service is one --service value; each registers itself from a file of
// its own (zookeeper.go, redis.go, etcd.go).
type Service interface {
	// Name is the --service value.
	Name() string
	// Program is the local backend's server program of the service.
	Program() local.Program
	// Preflight checks, before anything of a run starts, what the
	// service's servers need on this machine.
	Preflight() error
	// Recipe is the --recipe of a run on the service that names none (""
	// keeps the caller's default).
	Recipe() string
}

var services = registry[Service]{what: "service"}

// RegisterService adds a service; order is its place in Services. Each
// service's file calls it from init.
func RegisterService(s Service, order int) { services.add(s, order) }

// LookupService is the service of a --service value; the error of an
// unknown one lists the known ones.
func LookupService(name string) (Service, error) { return services.lookup(name) }

// Services lists the --service values.
func Services() []string { return services.names() }

// ValidateService checks a --service value and whether the backend runs
// it, by name alone (the docker image is ZooKeeper's; redis and etcd
// servers run on the local backend only).
func ValidateService(service, backendName string) error {
	if _, err := LookupService(service); err != nil {
		return err
	}
	if b, ok := has[Backend](backendName); ok && !b.RunsService(service) {
		runs := backends.where(func(b Backend) bool { return b.RunsService(service) })
		cl := setting.Name("Cluster")
		return fmt.Errorf("%s runs on the %s backend only (the %s backend's image is ZooKeeper's); use %s %s",
			service, strings.Join(runs, ", "), backendName, cl, strings.Join(runs, " or "+cl+" "))
	}
	return nil
}

// program is the local backend's server program for service (ZooKeeper's
// for "" and, validation having refused it, an unknown one).
func program(service string) local.Program {
	if s, err := LookupService(cluster.ServiceOf(service)); err == nil {
		return s.Program()
	}
	return local.ZooKeeper{}
}

// PreflightService checks what the service's servers need on this
// machine (redis-server, etcd-server); "" is ZooKeeper.
func PreflightService(service string) error {
	svc, err := LookupService(cluster.ServiceOf(service))
	if err != nil {
		return setting.Err("Service", "", err)
	}
	if err := svc.Preflight(); err != nil {
		return setting.Err("Service", service, err)
	}
	return nil
}
