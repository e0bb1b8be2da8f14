#!/usr/bin/env bash
# Installs what zkchaos needs on a Debian machine when it is missing:
# Java 17 (headless, with javac), ZooKeeper 3.8 jars (libzookeeper-java),
# Curator 5.4 jars for the curator subject, an SLF4J binding so the
# servers log, iproute2 and iptables for network namespaces, mmdebstrap to
# build the docker backend's ZooKeeper image offline (chaos image build),
# python3-kazoo for the kazoo subject (--recipe kazoo) and the conformance
# tests' Python election worker, redis-server and etcd-server for the
# other lock services (--service redis|etcd), Debian's chromium
# (headless) with a font for the browser tests, postgresql-15 for
# --resource postgres (pgfence, tests/postgres), and openssh-server and
# sudo for the ssh backend's test rig (tests/ssh: sshd in namespaces).
# Go modules are fetched by `go mod download`. Safe to run again: it does
# nothing when everything is there.
set -euo pipefail

need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
if [ -z "${ZOOKEEPER_HOME:-}" ]; then
  [ -f /usr/share/java/zookeeper.jar ] || need+=(libzookeeper-java)
fi
[ -f /usr/share/java/slf4j-simple.jar ] || need+=(libslf4j-java)
# The curator subject: Curator 5.4 jars, and javac to compile its worker once.
[ -f /usr/share/java/curator-recipes.jar ] || need+=(libcurator-recipes-java)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
# The kazoo subject (subjects/kazoo/kazoo_worker.py) and the Python election
# worker of the conformance tests (subjects/conformance/testdata/
# election_worker.py): kazoo for Debian's python3, the interpreter they run on.
/usr/bin/python3 -c 'import kazoo' >/dev/null 2>&1 || need+=(python3-kazoo)
# The other lock services (chaos run --service redis|etcd): their servers.
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
# The ssh backend's test rig (tests/ssh): Debian's sshd, run by the test in
# namespaces with its own config (the package's own service is not used),
# and sudo for the rig's user, allowed iptables only.
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
[ -x /usr/bin/sudo ] || need+=(sudo)

if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
      echo "install-deps: need root (or sudo) to apt-get install ${need[*]}" >&2
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: no apt-get here; install ${need[*]} (or set ZOOKEEPER_HOME to a ZooKeeper tarball) by hand" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # --no-install-recommends keeps Java headless (the zookeeper package would pull a desktop JRE).
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The browser tests (internal/testkit/browser, tests/browser) drive Debian's
# chromium headless; fonts-dejavu-core is the font its screenshots are
# drawn in. It is installed on its own, after the rest: where it cannot be
# (no apt-get, no root, the install fails), the reason goes to
# bin/chromium-unavailable and the browser tests skip saying so, while
# everything else still installs and runs. A later run that installs it
# removes the note.
install_chromium() {
  local root note want=()
  root=$(cd "$(dirname "$0")/.." && pwd)
  note="$root/bin/chromium-unavailable"
  command -v chromium >/dev/null 2>&1 || want+=(chromium)
  [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || want+=(fonts-dejavu-core)
  if [ ${#want[@]} -eq 0 ]; then
    rm -f "$note"
    return
  fi
  mkdir -p "$root/bin"
  local SUDO="" why=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else why="not root and no sudo to apt-get install ${want[*]}"; fi
  fi
  command -v apt-get >/dev/null 2>&1 || why="no apt-get to install ${want[*]}"
  if [ -z "$why" ]; then
    echo "install-deps: installing ${want[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null; }; then
      why="apt-get install ${want[*]} failed"
    fi
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
install_chromium

# --resource postgres starts Debian's postgresql-15 server binaries itself
# (initdb, postgres in /usr/lib/postgresql/15/bin, as the postgres user the
# package creates). The package would also create and start a system
# cluster on port 5432, which nothing here uses: postgresql-common goes
# first and is told not to (create_main_cluster = false).
install_postgres() {
  [ -x /usr/lib/postgresql/15/bin/postgres ] && [ -x /usr/lib/postgresql/15/bin/initdb ] && return
  local SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
      echo "install-deps: not root and no sudo to install postgresql-15: --resource postgres and its tests will be refused/skipped" >&2
      return
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: no apt-get to install postgresql-15: --resource postgres and its tests will be refused/skipped" >&2
    return
  fi
  echo "install-deps: installing postgresql-15" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends postgresql-common >/dev/null
  $SUDO mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.d/zkchaos.conf >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null
}
install_postgres

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH=/usr/local/go/bin:$PATH
fi
go mod download
