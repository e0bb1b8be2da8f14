#!/usr/bin/env bash
# Installs what zkchaos needs on a Debian machine when it is missing:
# Java 17 (headless, with javac), ZooKeeper 3.8 jars (libzookeeper-java),
# Curator 5.4 jars for the curator subject, an SLF4J binding so the
# servers log, iproute2 and iptables for network namespaces, mmdebstrap to
# build the docker backend's ZooKeeper image offline (chaos image build),
# python3-kazoo for the conformance tests' Python election worker.
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
# The Python election worker of the conformance tests
# (subjects/conformance/testdata/election_worker.py): kazoo for Debian's python3.
/usr/bin/python3 -c 'import kazoo' >/dev/null 2>&1 || need+=(python3-kazoo)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)

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

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH=/usr/local/go/bin:$PATH
fi
go mod download
