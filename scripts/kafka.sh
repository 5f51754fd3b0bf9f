#!/usr/bin/env bash
# A real Apache Kafka 4.1.1 broker (KRaft mode, no ZooKeeper) on loopback,
# from Maven Central's jars: the broker `cauda broker` and its
# tests run against, for anyone who has Java and Maven but no broker.
#
#   scripts/kafka.sh fetch
#       Resolves org.apache.kafka:kafka_2.13, org.apache.kafka:kafka-tools
#       (the topic, console and perf tools) and log4j-slf4j-impl (so the
#       broker's log is written) with `mvn dependency:copy-dependencies` from
#       a generated pom, into $CAUDA_KAFKA_CACHE/lib. Quick when cached.
#   scripts/kafka.sh start [--brokers 1|3] [--dir DIR] [--port-base PORT]
#                          [--server-config FILE]
#       Fetches if needed, formats each node's storage once
#       (kafka.tools.StorageTool format) and starts kafka.Kafka per node in
#       the background. Waits until every broker is unfenced and answers a
#       metadata request (BrokerApiVersionsCommand), then prints the
#       bootstrap address(es) on stdout; pid files and logs go on stderr.
#       Node i (1..N) listens on 127.0.0.1 only: clients (PLAINTEXT) at
#       PORT+2(i-1), its controller (CONTROLLER) at PORT+2(i-1)+1, so the
#       default PORT 9092 gives Kafka's usual 9092/9093 for one broker.
#       Each node is a combined broker+controller (process.roles=
#       broker,controller) and the three form the controller quorum, so
#       three JVMs make the cluster. --server-config FILE appends FILE's
#       broker settings to every node's server.properties (a later key
#       wins: an authorizer, SASL on the controller listener, log.* ...);
#       it applies to that start only. With 3 brokers, topics default to
#       RF 3 and min.insync.replicas 2 (acks=all waits for 2 of 3); with 1,
#       RF 1, where acks=all is acks=1. Start on a DIR it made before
#       reuses its data (topics survive a stop and start).
#   scripts/kafka.sh stop [--dir DIR] [--clean]
#       SIGTERM to what start started (its pid files), waits for exit
#       (SIGKILL after $CAUDA_KAFKA_STOP_TIMEOUT s, said so); --clean then
#       removes DIR (only a DIR this script made).
#   scripts/kafka.sh status [--dir DIR]
#       Prints the bootstrap addresses when every node runs, else exit 1.
#   scripts/kafka.sh topic create|delete|describe|list [NAME] [--dir DIR]
#                          [kafka-topics options: --partitions N
#                           --replication-factor R --config K=V ...]
#       kafka-topics (org.apache.kafka.tools.TopicCommand) against DIR's
#       cluster.
#   scripts/kafka.sh tool CLASS [ARGS...]
#       Runs a class from the jars with java -cp, like kafka-run-class.sh:
#       org.apache.kafka.tools.ProducerPerformance, .EndToEndLatency,
#       .ConsoleProducer, .consumer.ConsoleConsumer, ...
#
# Broker settings beside Kafka's defaults: group.initial.rebalance.delay.ms=0,
# num.partitions=1, internal topics at the cluster's RF; log.flush.* is left
# at Kafka's default (no fsync per append: durability comes from
# replication; a topic's flush.messages=1 fsyncs every append).
#
# Environment:
#   CAUDA_KAFKA_CACHE         jars (default ~/.cache/cauda-kafka/4.1.1)
#   CAUDA_KAFKA_DIR           default --dir (default ${TMPDIR:-/tmp}/cauda-kafka)
#   CAUDA_KAFKA_HEAP          broker heap flags (default -Xms512m -Xmx512m)
#   CAUDA_KAFKA_TOOL_OPTS     JVM flags for `tool` (default -Xmx256m, G1)
#   CAUDA_KAFKA_TIMEOUT       seconds start waits for the brokers (default 90)
#   CAUDA_KAFKA_STOP_TIMEOUT  seconds stop waits before SIGKILL (default 30)
# Needs java >= 17, and mvn for the first fetch.
# Exit status: 0 ok, 1 the broker failed (its log's last lines are
# printed), 2 bad usage, 3 java, mvn or the jars unavailable.
set -euo pipefail

KAFKA_VERSION=4.1.1
LOG4J_VERSION=2.24.3
DEPENDENCY_PLUGIN=3.8.1
CACHE="${CAUDA_KAFKA_CACHE:-${HOME:?}/.cache/cauda-kafka/$KAFKA_VERSION}"
LIB="$CACHE/lib"
# What the cache holds, written last by fetch: a change here refetches.
STAMP="kafka_2.13:$KAFKA_VERSION kafka-tools:$KAFKA_VERSION log4j-slf4j-impl:$LOG4J_VERSION"
TIMEOUT="${CAUDA_KAFKA_TIMEOUT:-90}"
STOP_TIMEOUT="${CAUDA_KAFKA_STOP_TIMEOUT:-30}"
read -r -a HEAP <<<"${CAUDA_KAFKA_HEAP:--Xms512m -Xmx512m}"
read -r -a TOOL_OPTS <<<"${CAUDA_KAFKA_TOOL_OPTS:--Xmx256m -XX:+UseG1GC -XX:MaxGCPauseMillis=20}"
# kafka-run-class.sh's JVM flags for the broker.
JVM_OPTS=(-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
    -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true)
# env --default-signal (coreutils >= 8.31) where it exists.
DEFAULT_SIGINT=()
env --default-signal=INT true 2>/dev/null && DEFAULT_SIGINT=(env --default-signal=INT)
# The script's own short-lived admin calls: start fast, no JIT warm-up.
QUICK_OPTS=(-Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC)

USAGE="usage: scripts/kafka.sh fetch
       scripts/kafka.sh start [--brokers 1|3] [--dir DIR] [--port-base PORT] [--server-config FILE]
       scripts/kafka.sh stop [--dir DIR] [--clean]
       scripts/kafka.sh status [--dir DIR]
       scripts/kafka.sh topic create|delete|describe|list [NAME] [--dir DIR] [kafka-topics options]
       scripts/kafka.sh tool CLASS [ARGS...]"

say() { echo "kafka.sh: $*" >&2; }
usage() {
    say "$*"
    echo "$USAGE" >&2
    exit 2
}
fail() {
    say "$*"
    exit 1
}
unavailable() {
    say "$*"
    exit 3
}

need_java() {
    command -v java >/dev/null || unavailable "java not found: Kafka $KAFKA_VERSION needs Java >= 17 (Debian: apt-get install default-jdk-headless)"
    local version major
    version=$(java -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n1)
    major=${version%%.*}
    if ! [[ $major =~ ^[0-9]+$ ]] || ((major < 17)); then
        unavailable "java ${version:-of unknown version} found: Kafka $KAFKA_VERSION needs Java >= 17"
    fi
}

jars_cached() { [[ -f $CACHE/complete && $(<"$CACHE/complete") == "$STAMP" ]]; }

write_pom() {
    cat >"$CACHE/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by cauda's scripts/kafka.sh fetch: the jars of a Kafka broker and its tools. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.cauda</groupId>
  <artifactId>kafka-jars</artifactId>
  <version>$KAFKA_VERSION</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
  <build>
    <pluginManagement>
      <plugins>
        <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>$DEPENDENCY_PLUGIN</version></plugin>
      </plugins>
    </pluginManagement>
  </build>
</project>
POM
}

# The log4j2 configurations: the broker's at INFO, the tools' at WARN, both
# to the process's stdout (start sends a broker's to its node's log).
write_log_configs() {
    local name level
    for name in broker tools; do
        level=info
        [[ $name == tools ]] && level=warn
        cat >"$CACHE/log4j2-$name.properties" <<EOF
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_$([[ $name == tools ]] && echo ERR || echo OUT)
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = $level
rootLogger.appenderRef.out.ref = out
EOF
    done
}

fetch() {
    mkdir -p "$CACHE"
    # One fetch at a time per cache: tests may start brokers in parallel.
    exec 8>"$CACHE/.lock"
    flock 8
    if ! jars_cached; then
        command -v mvn >/dev/null || unavailable "mvn not found: needed once to fetch Kafka's jars into $CACHE (Debian: apt-get install maven)"
        need_java
        say "fetching Kafka $KAFKA_VERSION's jars from Maven Central into $LIB"
        write_pom
        rm -rf "$CACHE/lib.partial" "$CACHE/complete"
        if ! (cd "$CACHE" && mvn -B -Dstyle.color=never dependency:copy-dependencies \
            -DincludeScope=runtime -DoutputDirectory=lib.partial >mvn.log 2>&1); then
            grep -E '\[(ERROR|WARNING)\]' "$CACHE/mvn.log" | head -n 20 >&2 || true
            unavailable "mvn could not resolve Kafka $KAFKA_VERSION's jars (is Maven Central reachable? its log: $CACHE/mvn.log)"
        fi
        rm -rf "$LIB"
        mv "$CACHE/lib.partial" "$LIB"
        echo "$STAMP" >"$CACHE/complete"
    fi
    write_log_configs
    exec 8>&-
    local jars=("$LIB"/*.jar)
    say "${#jars[@]} jars in $LIB"
}

# java with the jars on its class path: [JVM flags...] -- CLASS [ARGS...]
kafka_java() {
    local opts=()
    while [[ $1 != -- ]]; do
        opts+=("$1")
        shift
    done
    shift
    java "${opts[@]}" -cp "$LIB/*" "$@"
}

# ---- a cluster's directory ---------------------------------------------

DIR=""
BROKERS=""
PORT_BASE=""

# Loads DIR/cluster.env (written by start): BROKERS, PORT_BASE, CLUSTER_ID.
load_cluster() {
    [[ -f $DIR/cluster.env ]] || return 1
    local key value
    while IFS='=' read -r key value; do
        case $key in
        BROKERS) SAVED_BROKERS=$value ;;
        PORT_BASE) SAVED_PORT_BASE=$value ;;
        CLUSTER_ID) CLUSTER_ID=$value ;;
        esac
    done <"$DIR/cluster.env"
}

client_port() { echo $((PORT_BASE + 2 * ($1 - 1))); }
controller_port() { echo $((PORT_BASE + 2 * ($1 - 1) + 1)); }

bootstrap() {
    local i out=()
    for ((i = 1; i <= BROKERS; i++)); do out+=("127.0.0.1:$(client_port "$i")"); done
    (
        IFS=,
        echo "${out[*]}"
    )
}

# The pid in node $1's pid file when that process is still its broker.
running_pid() {
    local file="$DIR/node$1/kafka.pid" pid
    [[ -f $file ]] || return 1
    pid=$(<"$file")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    # The pid is ours only while its command line names this node's config.
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "kafka.Kafka $DIR/node$1/server.properties" || return 1
    echo "$pid"
}

write_server_properties() {
    local i=$1 voters=() j rf=$BROKERS min_isr=1
    ((BROKERS > 1)) && min_isr=2
    for ((j = 1; j <= BROKERS; j++)); do voters+=("$j@127.0.0.1:$(controller_port "$j")"); done
    cat >"$DIR/node$i/server.properties" <<EOF
# Written by cauda's scripts/kafka.sh start (rewritten at each start).
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$(
        IFS=,
        echo "${voters[*]}"
    )
listeners=PLAINTEXT://127.0.0.1:$(client_port "$i"),CONTROLLER://127.0.0.1:$(controller_port "$i")
advertised.listeners=PLAINTEXT://127.0.0.1:$(client_port "$i")
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DIR/node$i/data
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=$min_isr
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$min_isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$min_isr
group.initial.rebalance.delay.ms=0
EOF
    if [[ -n $SERVER_CONFIG ]]; then
        echo "# From --server-config $SERVER_CONFIG:" >>"$DIR/node$i/server.properties"
        cat "$SERVER_CONFIG" >>"$DIR/node$i/server.properties"
    fi
}

# Stops every node of DIR still running; waits; SIGKILL after the bound.
stop_nodes() {
    local i pid pids=() deadline
    for ((i = 1; i <= BROKERS; i++)); do
        if pid=$(running_pid "$i"); then
            # SIGCONT too: a broker a test froze (SIGSTOP) shuts down as well.
            kill -TERM "$pid" 2>/dev/null || true
            kill -CONT "$pid" 2>/dev/null || true
            pids+=("$pid")
            say "stopping node $i (pid $pid)"
        fi
    done
    deadline=$((SECONDS + STOP_TIMEOUT))
    for pid in "${pids[@]}"; do
        while kill -0 "$pid" 2>/dev/null; do
            if ((SECONDS >= deadline)); then
                say "pid $pid still running after ${STOP_TIMEOUT}s: SIGKILL"
                kill -KILL "$pid" 2>/dev/null || true
            fi
            sleep 0.2
        done
    done
    for ((i = 1; i <= BROKERS; i++)); do rm -f "$DIR/node$i/kafka.pid"; done
}

# Whether node $1's process, started by this script a moment ago, is alive:
# its pid exists and is not a zombie. Not running_pid: until the child has
# exec'd java, its command line is still this script's.
started_alive() {
    local pid stat
    pid=$(<"$DIR/node$1/kafka.pid")
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ ${stat:0:1} != Z ]]
}

# Fails start: stops what it started, shows the log of node $1.
start_failed() {
    local node=$1
    shift
    say "$*"
    if [[ -f $DIR/node$node/server.log ]]; then
        say "last lines of $DIR/node$node/server.log:"
        tail -n 25 "$DIR/node$node/server.log" >&2
    fi
    stop_nodes
    exit 1
}

# A cluster id as kafka.tools.StorageTool random-uuid makes one (16 random
# bytes in URL-safe base64, unpadded, never starting with '-'), without a JVM.
random_uuid() {
    local id="-"
    while [[ $id == -* ]]; do
        id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    done
    echo "$id"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

parse_dir_flags() { # sets DIR, BROKERS, PORT_BASE, SERVER_CONFIG, CLEAN from "$@"
    CLEAN="" SERVER_CONFIG=""
    while (($#)); do
        case $1 in
        --dir)
            [[ -n ${2-} && $2 != -* ]] || usage "--dir needs a directory"
            DIR=$2
            shift
            ;;
        --brokers)
            [[ $ACTION == start ]] || usage "--brokers is a flag of start"
            [[ ${2-} == 1 || ${2-} == 3 ]] || usage "--brokers takes 1 or 3"
            BROKERS=$2
            shift
            ;;
        --port-base)
            [[ $ACTION == start ]] || usage "--port-base is a flag of start"
            if ! [[ ${2-} =~ ^[0-9]{4,5}$ ]] || ((10#$2 < 1024 || 10#$2 > 65530)); then
                usage "--port-base takes a port from 1024 to 65530"
            fi
            PORT_BASE=$((10#$2))
            shift
            ;;
        --server-config)
            [[ $ACTION == start ]] || usage "--server-config is a flag of start"
            [[ -n ${2-} && $2 != -* ]] || usage "--server-config needs a file of broker settings"
            [[ -f $2 && -r $2 ]] || usage "--server-config $2: not a readable file"
            SERVER_CONFIG=$(realpath "$2")
            shift
            ;;
        --clean)
            [[ $ACTION == stop ]] || usage "--clean is a flag of stop"
            CLEAN=1
            ;;
        *) usage "unknown argument to $ACTION: $1" ;;
        esac
        shift
    done
    DIR=${DIR:-${CAUDA_KAFKA_DIR:-${TMPDIR:-/tmp}/cauda-kafka}}
    [[ $DIR == /* ]] || DIR="$PWD/$DIR"
    DIR=${DIR%/}
}

start() {
    parse_dir_flags "$@"
    need_java
    jars_cached || fetch
    write_log_configs
    SAVED_BROKERS="" SAVED_PORT_BASE="" CLUSTER_ID=""
    local fresh=""
    if load_cluster; then
        [[ -z $BROKERS || $BROKERS == "$SAVED_BROKERS" ]] \
            || usage "$DIR holds a $SAVED_BROKERS-broker cluster: stop --clean it or use another --dir"
        [[ -z $PORT_BASE || $PORT_BASE == "$SAVED_PORT_BASE" ]] \
            || usage "$DIR's cluster listens from port $SAVED_PORT_BASE: stop --clean it or use another --dir"
        BROKERS=$SAVED_BROKERS PORT_BASE=$SAVED_PORT_BASE
    else
        if [[ -e $DIR ]] && [[ -n $(ls -A "$DIR") ]]; then
            usage "$DIR is not empty and was not made by kafka.sh: name a new or empty --dir"
        fi
        BROKERS=${BROKERS:-1} PORT_BASE=${PORT_BASE:-9092} fresh=1
    fi

    local i pid port
    for ((i = 1; i <= BROKERS; i++)); do
        if pid=$(running_pid "$i"); then
            fail "node $i of $DIR already runs (pid $pid): scripts/kafka.sh stop --dir $DIR first"
        fi
    done
    for ((i = 1; i <= BROKERS; i++)); do
        for port in $(client_port "$i") $(controller_port "$i"); do
            port_in_use "$port" && fail "port $port on 127.0.0.1 is in use: choose another --port-base"
        done
    done
    if [[ -n $fresh ]]; then
        mkdir -p "$DIR"
        CLUSTER_ID=$(random_uuid)
        printf 'BROKERS=%s\nPORT_BASE=%s\nCLUSTER_ID=%s\n' "$BROKERS" "$PORT_BASE" "$CLUSTER_ID" >"$DIR/cluster.env"
    fi

    # Format each node's storage once, in parallel (a JVM each).
    local formats=()
    for ((i = 1; i <= BROKERS; i++)); do
        mkdir -p "$DIR/node$i"
        write_server_properties "$i"
        [[ -f $DIR/node$i/data/meta.properties ]] && continue
        kafka_java "${QUICK_OPTS[@]}" -Dlog4j2.configurationFile="$CACHE/log4j2-tools.properties" -- \
            kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$DIR/node$i/server.properties" \
            >"$DIR/node$i/format.log" 2>&1 &
        formats+=("$i:$!")
    done
    local f
    for f in "${formats[@]}"; do
        wait "${f#*:}" || {
            cat "$DIR/node${f%%:*}/format.log" >&2
            fail "formatting node ${f%%:*}'s storage failed"
        }
    done

    local offsets=()
    for ((i = 1; i <= BROKERS; i++)); do
        echo "---- started by scripts/kafka.sh at $(date -Is)" >>"$DIR/node$i/server.log"
        offsets[i]=$(stat -c %s "$DIR/node$i/server.log")
        # nohup: the broker outlives the shell that started it. A background
        # job of a script ignores SIGINT, and so would the JVM: env gives it
        # back, so Ctrl-C on what started it (a test run) stops the broker.
        nohup "${DEFAULT_SIGINT[@]}" java "${HEAP[@]}" "${JVM_OPTS[@]}" \
            -Dlog4j2.configurationFile="$CACHE/log4j2-broker.properties" \
            -cp "$LIB/*" kafka.Kafka "$DIR/node$i/server.properties" \
            </dev/null >>"$DIR/node$i/server.log" 2>&1 &
        echo $! >"$DIR/node$i/kafka.pid"
    done

    # Ready when each node has logged that it started (a KRaft broker says
    # so once it is unfenced) and a metadata request lists every broker.
    local deadline=$((SECONDS + TIMEOUT)) boot
    boot=$(bootstrap)
    for ((i = 1; i <= BROKERS; i++)); do
        until tail -c "+${offsets[i]}" "$DIR/node$i/server.log" | grep -q "Kafka Server started"; do
            started_alive "$i" || start_failed "$i" "node $i exited during start-up"
            ((SECONDS < deadline)) || start_failed "$i" "node $i did not start within ${TIMEOUT}s"
            sleep 0.2
        done
    done
    local listed=0
    while :; do
        listed=$(kafka_java "${QUICK_OPTS[@]}" -Dlog4j2.configurationFile="$CACHE/log4j2-tools.properties" -- \
            org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server "$boot" 2>/dev/null \
            | grep -c '^127\.0\.0\.1:[0-9]* (id: ') || true
        ((listed == BROKERS)) && break
        ((SECONDS < deadline)) || start_failed 1 "the metadata lists $listed of $BROKERS brokers after ${TIMEOUT}s"
        sleep 0.5
    done

    for ((i = 1; i <= BROKERS; i++)); do
        say "node $i: pid $(<"$DIR/node$i/kafka.pid") ($DIR/node$i/kafka.pid), log $DIR/node$i/server.log"
    done
    say "stop with: scripts/kafka.sh stop --dir $DIR"
    echo "$boot"
}

stop() {
    parse_dir_flags "$@"
    SAVED_BROKERS=""
    if ! load_cluster; then
        [[ -n $CLEAN && -e $DIR ]] && fail "$DIR was not made by kafka.sh: not removing it"
        say "no cluster in $DIR: nothing to stop"
        return 0
    fi
    BROKERS=$SAVED_BROKERS
    stop_nodes
    if [[ -n $CLEAN ]]; then
        rm -rf "$DIR"
        say "removed $DIR"
    fi
}

status() {
    parse_dir_flags "$@"
    load_cluster || fail "no cluster in $DIR"
    BROKERS=$SAVED_BROKERS PORT_BASE=$SAVED_PORT_BASE
    local i
    for ((i = 1; i <= BROKERS; i++)); do
        running_pid "$i" >/dev/null || fail "node $i of $DIR is not running"
    done
    bootstrap
}

topic() {
    (($#)) || usage "topic needs create, delete, describe or list"
    local verb=$1 args=() rest=()
    shift
    case $verb in
    create | delete | describe)
        [[ -n ${1-} && $1 != -* ]] || usage "topic $verb needs a topic name"
        args=(--"$verb" --topic "$1")
        shift
        ;;
    list) args=(--list) ;;
    *) usage "topic takes create, delete, describe or list, not $verb" ;;
    esac
    while (($#)); do
        if [[ $1 == --dir ]]; then
            [[ -n ${2-} && $2 != -* ]] || usage "--dir needs a directory"
            DIR=$2
            shift 2
        else
            rest+=("$1")
            shift
        fi
    done
    local boot
    boot=$(status ${DIR:+--dir "$DIR"})
    kafka_java "${QUICK_OPTS[@]}" -Dlog4j2.configurationFile="$CACHE/log4j2-tools.properties" -- \
        org.apache.kafka.tools.TopicCommand --bootstrap-server "$boot" "${args[@]}" "${rest[@]}"
}

tool() {
    (($#)) || usage "tool needs a class name"
    need_java
    jars_cached || unavailable "no jars in $CACHE: run scripts/kafka.sh fetch"
    write_log_configs
    kafka_java "${TOOL_OPTS[@]}" -Dlog4j2.configurationFile="$CACHE/log4j2-tools.properties" -- "$@"
}

(($#)) || usage "no command"
ACTION=$1
shift
case $ACTION in
fetch)
    (($# == 0)) || usage "fetch takes no arguments"
    fetch
    ;;
start) start "$@" ;;
stop) stop "$@" ;;
status) status "$@" ;;
topic) topic "$@" ;;
tool) tool "$@" ;;
-h | --help | help) echo "$USAGE" ;;
*) usage "unknown command: $ACTION" ;;
esac
