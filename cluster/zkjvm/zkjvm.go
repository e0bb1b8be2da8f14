// Package zkjvm is how a ZooKeeper server's JVM is started and configured,
// in one place for every backend that starts one: cluster/local execs it
// directly, and the docker image's start script is generated from it, so a
// server behaves the same (start time, memory, logging, session limits)
// whichever backend runs it.
package zkjvm

import "time"

// DebianClassPath works because zookeeper.jar's manifest Class-Path names
// its dependencies; slf4j-simple gives the server a logger (without a
// binding the server logs nothing).
const DebianClassPath = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"

// MainClass runs a server of an ensemble (or standalone, with one server).
const MainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// Flags are the JVM options of every server, before the class path.
func Flags() []string {
	return []string{
		"-Xmx256m", "-XX:+UseSerialGC",
		// C1 only: on a small machine several JVMs compiling with C2 at once
		// slow each other's start, and throughput does not matter here.
		"-XX:TieredStopAtLevel=1",
		// No hsperfdata files in /tmp to clean up after a SIGKILL.
		"-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
	}
}

// Args is the whole java command line after "java" for a server whose
// configuration is cfgPath.
func Args(classPath, cfgPath string) []string {
	return append(Flags(), "-cp", classPath, MainClass, cfgPath)
}

// Purge settings of every server: ZooKeeper keeps the newest
// PurgeSnapRetainCount snapshots (and the transaction logs they need) and
// deletes older ones every PurgeIntervalHours. Without a purge, a data
// dir grows with every snapshot (one per snapCount transactions, 100 000
// by default) for as long as the server runs, so an 8-hour soak would
// fill its disk with history nobody reads; 3 is ZooKeeper's minimum.
const (
	PurgeSnapRetainCount = 3
	PurgeIntervalHours   = 1
)

// SessionTimeouts are the server's session limits for a tick: the minimum
// is ZooKeeper's default (2 ticks), the maximum its default (20 ticks)
// raised to maxSession when a workload asks for longer sessions.
func SessionTimeouts(tick, maxSession time.Duration) (lo, hi time.Duration) {
	return 2 * tick, max(20*tick, maxSession)
}
