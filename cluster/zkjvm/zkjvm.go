// Package zkjvm is how a ZooKeeper server's JVM is started and configured,
// in one place for every backend that starts one: cluster/local execs it
// directly, and the docker image's start script is generated from it, so a
// server behaves the same (start time, memory, logging, session limits)
// whichever backend runs it.
package zkjvm

import (
	"fmt"
	"strings"
	"time"
)

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

// Server is one member of the ensemble as zoo.cfg names it.
type Server struct {
	ID int
	// IP is where the other servers reach it.
	IP string
	// Quorum and Election are its peer ports (2888 and 3888 by default).
	Quorum, Election int
}

// Settings are what a server's zoo.cfg says, whichever backend writes it
// (cluster/local on this machine, cluster/ssh on a remote host).
type Settings struct {
	TickTime, MaxSessionTimeout time.Duration
	ForceSync                   bool
	DataDir                     string
	// ClientPort and ClientAddr are where the server takes clients.
	ClientPort int
	ClientAddr string
	// FourLetterWords are the only words it answers
	// (4lw.commands.whitelist).
	FourLetterWords []string
	Servers         []Server
}

// ZooCfg is the server's configuration.
func ZooCfg(s Settings) string {
	minSess, maxSess := SessionTimeouts(s.TickTime, s.MaxSessionTimeout)
	forceSync := "no"
	if s.ForceSync {
		forceSync = "yes"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=10\nsyncLimit=5\n", s.TickTime.Milliseconds())
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", minSess.Milliseconds(), maxSess.Milliseconds())
	fmt.Fprintf(&b, "dataDir=%s\n", s.DataDir)
	fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=%s\n", s.ClientPort, s.ClientAddr)
	fmt.Fprintf(&b, "4lw.commands.whitelist=%s\nadmin.enableServer=false\n", strings.Join(s.FourLetterWords, ","))
	fmt.Fprintf(&b, "forceSync=%s\n", forceSync)
	fmt.Fprintf(&b, "autopurge.snapRetainCount=%d\nautopurge.purgeInterval=%d\n", PurgeSnapRetainCount, PurgeIntervalHours)
	for _, n := range s.Servers {
		fmt.Fprintf(&b, "server.%d=%s:%d:%d\n", n.ID, n.IP, n.Quorum, n.Election)
	}
	return b.String()
}
