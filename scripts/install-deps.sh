#!/usr/bin/env bash
# Installs what zkchaos needs on a Debian machine when it is missing, in
# one of two sets:
#
#   scripts/install-deps.sh run    (make run) what a default `chaos run`
#       uses: a local 3-node ZooKeeper ensemble of JVMs, the built-in
#       worker (bin/chaos itself) and network namespaces. That is Java 17
#       (headless JRE), ZooKeeper 3.8's jars (libzookeeper-java), the SLF4J
#       binding the servers log with, and iproute2 and iptables.
#   scripts/install-deps.sh [test] (make test, make bench; the default)
#       the run set and everything a test or a non-default run needs:
#       javac and the Curator 5.4 jars for the curator subjects (--recipe
#       curator, chaos bench), python3-kazoo for the kazoo subject and the
#       conformance tests' Python election worker, redis-server and
#       etcd-server for --service redis|etcd, mmdebstrap to build the
#       docker backend's image offline (chaos image build), openssh-server
#       and sudo for the ssh backend's test rig (tests/ssh), Debian's
#       chromium (headless) with a font for the browser tests, and
#       postgresql-15 for --resource postgres (pgfence, tests/postgres).
#
# A run started with an option whose package the run set left out is
# refused before anything is made, the missing program named on the
# first line with how to install it (docs/architecture.md, "scripts/").
# Go modules are fetched by `go mod download`. Safe to run again: it
# installs nothing when everything is there.
#
# INSTALL_DEPS_DRY=1 prints the packages it would install, one a line,
# and exits without installing or downloading anything (no root needed).
# INSTALL_DEPS_ROOT=DIR looks for the files it checks (jars, python3,
# sshd, PostgreSQL) under DIR instead of /: with an empty DIR and an
# empty PATH the dry run lists a whole set, which scripts/deps_test.go
# checks.
set -euo pipefail

mode=${1:-test}
case "$mode" in
  run | test) ;;
  *)
    echo "install-deps: unknown set \"$mode\": run (what a default chaos run uses) or test (everything)" >&2
    exit 2
    ;;
esac
root=${INSTALL_DEPS_ROOT:-}

has() { command -v "$1" >/dev/null 2>&1; }
file() { [ -f "$root$1" ]; }
exe() { [ -x "$root$1" ]; }

# The missing packages, in three lists because each is installed
# differently (below): need must install, browser may fail (the browser
# tests then skip), postgres needs a setting first.
need=()
browser=()
postgres=()
add() {
  local p
  for p in "${need[@]}"; do [ "$p" = "$1" ] && return; done
  need+=("$1")
}

# What a default chaos run starts: ZooKeeper's JVMs (cluster/local,
# cluster/zkjvm: java -cp zookeeper.jar:slf4j-simple.jar) and, as root,
# a network namespace per server and worker (host/netns: ip, iptables).
# The worker is bin/chaos itself (the seed recipe), the register too.
want_run() {
  has java || add openjdk-17-jre-headless
  # With ZOOKEEPER_HOME the tarball's lib/ is the class path, logger included.
  if [ -z "${ZOOKEEPER_HOME:-}" ]; then
    file /usr/share/java/zookeeper.jar || add libzookeeper-java
    file /usr/share/java/slf4j-simple.jar || add libslf4j-java
  fi
  has ip || add iproute2
  has iptables || add iptables
}

want_test() {
  # The curator subjects: Curator 5.4 jars (with SLF4J's binding for
  # their log), and javac to compile the Java worker once.
  file /usr/share/java/curator-recipes.jar || add libcurator-recipes-java
  file /usr/share/java/slf4j-simple.jar || add libslf4j-java
  has javac || add openjdk-17-jdk-headless
  # The kazoo subject (client/subjects/kazoo) and the conformance tests'
  # Python election worker: kazoo for Debian's python3, the interpreter
  # they run on.
  "$root/usr/bin/python3" -c 'import kazoo' >/dev/null 2>&1 || add python3-kazoo
  # The other lock services (--service redis|etcd): their servers.
  has redis-server || add redis-server
  has etcd || add etcd-server
  has mmdebstrap || add mmdebstrap
  # The ssh backend's test rig (tests/ssh): Debian's sshd, run by the test
  # in namespaces with its own config (the package's own service is not
  # used), and sudo for the rig's user, allowed iptables only.
  exe /usr/sbin/sshd || add openssh-server
  exe /usr/bin/sudo || add sudo
  has chromium || browser+=(chromium)
  file /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf || browser+=(fonts-dejavu-core)
  { exe /usr/lib/postgresql/15/bin/postgres && exe /usr/lib/postgresql/15/bin/initdb; } || postgres+=(postgresql-15)
}

want_run
if [ "$mode" = test ]; then want_test; fi

if [ -n "${INSTALL_DEPS_DRY:-}" ]; then
  for p in "${need[@]}" "${browser[@]}" "${postgres[@]}"; do echo "$p"; done
  exit 0
fi

# SUDO is how apt-get runs: empty as root, sudo otherwise; no_root says
# why it cannot run at all.
SUDO=""
no_root=""
if [ "$(id -u)" -ne 0 ]; then
  if has sudo; then SUDO=sudo; else no_root="not root and no sudo"; fi
fi
has apt-get || no_root="no apt-get"
export DEBIAN_FRONTEND=noninteractive
updated=""
# --no-install-recommends keeps Java headless (the zookeeper package would
# pull a desktop JRE).
apt_install() {
  if [ -z "$updated" ]; then
    $SUDO apt-get update -qq || return
    updated=1
  fi
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if [ ${#need[@]} -gt 0 ]; then
  if [ -n "$no_root" ]; then
    echo "install-deps: $no_root to apt-get install ${need[*]}: install them (or set ZOOKEEPER_HOME to a ZooKeeper tarball) by hand" >&2
    exit 1
  fi
  echo "install-deps: installing ${need[*]}" >&2
  apt_install "${need[@]}"
fi

# The browser tests (internal/testkit/browser, tests/browser) drive Debian's
# chromium headless; fonts-dejavu-core is the font its screenshots are
# drawn in. It is installed on its own, after the rest: where it cannot be
# (no apt-get, no root, the install fails), the reason goes to
# bin/chromium-unavailable and the browser tests skip saying so, while
# everything else still installs and runs. A later run that installs it
# removes the note.
install_chromium() {
  local note why=""
  note="$(cd "$(dirname "$0")/.." && pwd)/bin/chromium-unavailable"
  if [ ${#browser[@]} -eq 0 ]; then
    rm -f "$note"
    return
  fi
  mkdir -p "$(dirname "$note")"
  if [ -n "$no_root" ]; then
    why="$no_root to install ${browser[*]}"
  else
    echo "install-deps: installing ${browser[*]}" >&2
    apt_install "${browser[@]}" || why="apt-get install ${browser[*]} failed"
  fi
  if [ -n "$why" ]; then
    echo "install-deps: $why: the browser tests will skip" >&2
    echo "$why" >"$note"
    return
  fi
  rm -f "$note"
  # Headless, as the tests start it (--no-sandbox: root has no sandbox).
  if ! timeout 60 chromium --headless --no-sandbox --disable-gpu --dump-dom \
    'data:text/html,<title>zkchaos-ok</title>' 2>/dev/null | grep -q zkchaos-ok; then
    echo "install-deps: chromium is installed but does not run headless: the browser tests will fail" >&2
  fi
}

# --resource postgres starts Debian's postgresql-15 server binaries itself
# (initdb, postgres in /usr/lib/postgresql/15/bin, as the postgres user the
# package creates). The package would also create and start a system
# cluster on port 5432, which nothing here uses: postgresql-common goes
# first and is told not to (create_main_cluster = false).
install_postgres() {
  if [ ${#postgres[@]} -eq 0 ]; then return; fi
  if [ -n "$no_root" ]; then
    echo "install-deps: $no_root to install postgresql-15: --resource postgres and its tests will be refused/skipped" >&2
    return
  fi
  echo "install-deps: installing postgresql-15" >&2
  apt_install postgresql-common
  $SUDO mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.d/zkchaos.conf >/dev/null
  apt_install postgresql-15
}

if [ "$mode" = test ]; then
  install_chromium
  install_postgres
fi

if ! has go && [ -x /usr/local/go/bin/go ]; then
  export PATH=/usr/local/go/bin:$PATH
fi
go mod download
