// Package services holds the integration tests of the lock services
// beyond ZooKeeper (--service redis|etcd): for each service a
// short fenced run is valid and a short unfenced run is caught under
// pause-holder, on real redis-server and etcd members started by the
// harness; a bad --service, a server binary that is missing (PATH
// without it, or the ZKCHAOS_* override naming nothing) and a server
// that exits while starting are refused with exit 255 and leave nothing
// running. About 2 minutes with both packages installed.
package services
