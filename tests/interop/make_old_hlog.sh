#!/usr/bin/env bash
# Write an interval log with an OLD Java HdrHistogram (V0 or V1 histogram
# encoding) and the figures Java gives for it.
#
#   tests/interop/make_old_hlog.sh VERSION OUTDIR
#
# writes OUTDIR/java-VERSION.hlog and OUTDIR/java-VERSION.expected.json
# (MakeOldHlog.java, run with org.hdrhistogram:HdrHistogram:VERSION), then
# OUTDIR/java-VERSION.reader-2.2.2.expected.json: the same log read back by today's
# Java reader (run_java.sh, HdrHistogram 2.2.2).
#
# Needs: java + javac (>= 11), mvn (Maven Central reachable the first time).
# These versions print base64 with javax.xml.bind, which the JDK dropped in
# 11, so javax.xml.bind:jaxb-api:2.3.1 is put on the class path.
# Environment: CAUDA_INTEROP_CACHE as for run_java.sh.
# Exit status: 0 ok, 1 failure, 2 usage, 3 toolchain or jar unavailable.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 VERSION OUTDIR" >&2
    exit 2
fi
VERSION="$1"
OUT="$2"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${CAUDA_INTEROP_CACHE:-${TMPDIR:-/tmp}/cauda-interop-java}"
JAR="$CACHE/HdrHistogram-$VERSION.jar"
JAXB="$CACHE/jaxb-api-2.3.1.jar"
CLASSES="$CACHE/classes-old-$VERSION"

die() { echo "make_old_hlog.sh: $*" >&2; exit 3; }
command -v java >/dev/null || die "java not found"
command -v javac >/dev/null || die "javac not found"
mkdir -p "$CACHE"

fetch() { # groupId:artifactId:version, the jar it makes
    [ -s "$2" ] && return 0
    command -v mvn >/dev/null || die "mvn not found (needed once to fetch $2)"
    ( cd "$CACHE" && mvn -q -B -Dstyle.color=never dependency:copy \
        -Dartifact="$1" -DoutputDirectory="$CACHE" >&2 ) || die "mvn dependency:copy $1 failed"
    [ -s "$2" ] || die "jar not found after mvn: $2"
}
fetch "org.hdrhistogram:HdrHistogram:$VERSION" "$JAR"
fetch "javax.xml.bind:jaxb-api:2.3.1" "$JAXB"

if [ ! -f "$CLASSES/MakeOldHlog.class" ] || [ "$HERE/java/MakeOldHlog.java" -nt "$CLASSES/MakeOldHlog.class" ]; then
    mkdir -p "$CLASSES"
    javac -nowarn -cp "$JAR" -d "$CLASSES" "$HERE/java/MakeOldHlog.java" >&2 || die "javac MakeOldHlog.java failed"
fi
java -cp "$JAR:$JAXB:$CLASSES" MakeOldHlog "$OUT" "$VERSION" || exit 1
HDRHISTOGRAM_VERSION=2.2.2 "$HERE/run_java.sh" "$OUT/java-$VERSION.hlog" > "$OUT/java-$VERSION.reader-2.2.2.expected.json"
