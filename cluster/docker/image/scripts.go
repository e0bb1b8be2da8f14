package image

import (
	"fmt"
	"strings"

	"github.com/zkchaos/zkchaos/cluster/zkjvm"
)

// Env is the image's configuration by default, with the official image's
// names and values, so that a compose file or a docker run written for the
// official image works unchanged. The one difference: the AdminServer is
// off by default (as cluster/local runs it), since nothing here uses it and
// it would take port 8080 and memory in every container.
var Env = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"ZOO_CONF_DIR=/conf",
	"ZOO_DATA_DIR=/data",
	"ZOO_DATA_LOG_DIR=/datalog",
	"ZOO_TICK_TIME=2000",
	"ZOO_INIT_LIMIT=5",
	"ZOO_SYNC_LIMIT=2",
	"ZOO_AUTOPURGE_PURGEINTERVAL=0",
	"ZOO_AUTOPURGE_SNAPRETAINCOUNT=3",
	"ZOO_MAX_CLIENT_CNXNS=60",
	"ZOO_STANDALONE_ENABLED=true",
	"ZOO_ADMINSERVER_ENABLED=false",
}

// Paths of the two scripts inside the image.
const (
	EntrypointPath = "/docker-entrypoint.sh"
	ServerPath     = "/usr/local/bin/zkServer.sh"
)

// Cmd is the image's default command, the official image's.
var Cmd = []string{"zkServer.sh", "start-foreground"}

// entrypoint follows the official image's docker-entrypoint.sh: it writes
// zoo.cfg from the ZOO_* variables and myid from ZOO_MY_ID, each only when
// missing, so that a restarted container (or one whose /conf and /data are
// mounted from a previous life) keeps its identity and data; then it
// execs the command, so that the JVM becomes PID 1.
const entrypoint = `#!/bin/sh
# zkchaos ZooKeeper image: the official image's conventions (ZOO_MY_ID,
# ZOO_SERVERS, ZOO_4LW_COMMANDS_WHITELIST, ZOO_TICK_TIME, ZOO_CFG_EXTRA,
# /conf, /data, /datalog), without gosu: run it with --user to drop root.
set -e

if [ ! -f "$ZOO_CONF_DIR/zoo.cfg" ]; then
    CONFIG="$ZOO_CONF_DIR/zoo.cfg"
    {
        echo "dataDir=$ZOO_DATA_DIR"
        echo "dataLogDir=$ZOO_DATA_LOG_DIR"

        echo "tickTime=$ZOO_TICK_TIME"
        echo "initLimit=$ZOO_INIT_LIMIT"
        echo "syncLimit=$ZOO_SYNC_LIMIT"

        echo "autopurge.snapRetainCount=$ZOO_AUTOPURGE_SNAPRETAINCOUNT"
        echo "autopurge.purgeInterval=$ZOO_AUTOPURGE_PURGEINTERVAL"
        echo "maxClientCnxns=$ZOO_MAX_CLIENT_CNXNS"
        echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
        echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
    } > "$CONFIG.tmp"
    if [ -z "$ZOO_SERVERS" ]; then
        ZOO_SERVERS="server.1=localhost:2888:3888;2181"
    fi
    for server in $ZOO_SERVERS; do
        echo "$server" >> "$CONFIG.tmp"
    done
    if [ -n "$ZOO_4LW_COMMANDS_WHITELIST" ]; then
        echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST" >> "$CONFIG.tmp"
    fi
    for cfg_extra_entry in $ZOO_CFG_EXTRA; do
        echo "$cfg_extra_entry" >> "$CONFIG.tmp"
    done
    # Renamed into place: a container killed while writing must not leave
    # half a zoo.cfg that the next start would keep.
    mv "$CONFIG.tmp" "$CONFIG"
fi

if [ ! -f "$ZOO_DATA_DIR/myid" ]; then
    echo "${ZOO_MY_ID:-1}" > "$ZOO_DATA_DIR/myid"
fi

exec "$@"
`

// serverScript is the image's zkServer.sh. Only start-foreground exists:
// the JVM is exec'd so that it is PID 1, and signals the engine sends to
// the container (SIGTERM on stop, SIGSTOP/SIGCONT for a pause) reach the
// server itself, not a shell that would ignore them. Its command line is
// zkjvm's, the same as cluster/local's; JVMFLAGS adds options, as in the
// official image.
func serverScript() string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString("# zkchaos ZooKeeper image: the server in the foreground, as this process.\n")
	b.WriteString("if [ \"$1\" != start-foreground ]; then\n")
	b.WriteString("    echo \"zkServer.sh: only start-foreground is supported in this image, got: $*\" >&2\n")
	b.WriteString("    exit 2\n")
	b.WriteString("fi\n")
	b.WriteString("# JVMFLAGS is split into words on purpose.\n")
	b.WriteString("exec java")
	for _, f := range zkjvm.Flags() {
		b.WriteString(" " + shellQuote(f))
	}
	fmt.Fprintf(&b, " $JVMFLAGS -cp %s %s \"$ZOO_CONF_DIR/zoo.cfg\"\n", shellQuote(zkjvm.DebianClassPath), shellQuote(zkjvm.MainClass))
	return b.String()
}

// shellQuote makes s one word for sh, whatever it holds.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
