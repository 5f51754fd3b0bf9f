#!/usr/bin/env bash
# Read an HdrHistogram .hlog with the Java reference implementation.
#
#   tests/interop/run_java.sh FILE [--tag TAG | --untagged]
#       prints {"count","min","max","p50","p90","p99","p999"} as JSON (ReadHlog.java)
#   tests/interop/run_java.sh --make-fixture OUTDIR
#       re-creates java.hlog, java.hgrm, java.expected.json in OUTDIR (MakeHlog.java)
#
# Needs: java + javac (>= 11), mvn (Maven Central reachable the first time).
# Environment:
#   HDRHISTOGRAM_VERSION  (default 2.2.2)
#   CAUDA_INTEROP_CACHE   where the jar and compiled classes live
#                         (default ${TMPDIR:-/tmp}/cauda-interop-java)
# Exit status: that of ReadHlog (0 ok, 1 read failure, 2 usage) or 3 when the
# toolchain/jar is unavailable.
set -euo pipefail

VERSION="${HDRHISTOGRAM_VERSION:-2.2.2}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${CAUDA_INTEROP_CACHE:-${TMPDIR:-/tmp}/cauda-interop-java}"
JAR="$CACHE/HdrHistogram-$VERSION.jar"
CLASSES="$CACHE/classes-$VERSION"

die() { echo "run_java.sh: $*" >&2; exit 3; }

if [ $# -lt 1 ]; then
    echo "usage: $0 FILE [--tag TAG | --untagged]  |  $0 --make-fixture OUTDIR" >&2
    exit 2
fi

command -v java >/dev/null || die "java not found"
command -v javac >/dev/null || die "javac not found"
mkdir -p "$CACHE"

if [ ! -s "$JAR" ]; then
    command -v mvn >/dev/null || die "mvn not found (needed once to fetch $JAR)"
    # run from the cache dir so no project pom.xml is picked up
    ( cd "$CACHE" && mvn -q -B -Dstyle.color=never dependency:copy \
        -Dartifact="org.hdrhistogram:HdrHistogram:$VERSION" \
        -DoutputDirectory="$CACHE" >&2 ) || die "mvn dependency:copy failed"
    [ -s "$JAR" ] || die "jar not found after mvn: $JAR"
fi

# (re)compile when a source is newer than its class
for src in ReadHlog MakeHlog; do
    if [ ! -f "$CLASSES/$src.class" ] || [ "$HERE/java/$src.java" -nt "$CLASSES/$src.class" ]; then
        mkdir -p "$CLASSES"
        javac -nowarn -cp "$JAR" -d "$CLASSES" "$HERE/java/$src.java" >&2 || die "javac $src.java failed"
    fi
done

if [ "$1" = "--make-fixture" ]; then
    [ $# -eq 2 ] || { echo "usage: $0 --make-fixture OUTDIR" >&2; exit 2; }
    exec java -cp "$JAR:$CLASSES" MakeHlog "$2"
fi
exec java -cp "$JAR:$CLASSES" ReadHlog "$@"
