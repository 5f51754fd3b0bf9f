#!/usr/bin/env bash
# broker_vs_kafka_tools.sh - `cauda broker` (default configuration) beside
# Kafka's own tools from kafka-tools 4.1.1, on the same broker, alternating
# round by round, as issue 18 asks:
#
#   e2e:        kafka-e2e-latency (EndToEndLatency, closed loop, acks=1,
#               1 KiB) vs `cauda broker --closed-loop`: cauda's e2e mean
#               against its average (goal ≤ 1.05×);
#   publish:    kafka-producer-perf-test (ProducerPerformance) at 1000/s,
#               acks=1, 1 KiB, with its default linger.ms (5) and with
#               linger.ms=0, vs `cauda broker --rate 1000/s`: cauda's
#               publish.service p50 against its average latency (≤ 1.05×);
#   freeze:     both while the broker is frozen (SIGSTOP) for 500 ms: what
#               each printed;
#   throughput: the peer's best rate at acks=1, 1 KiB (--throughput -1),
#               then `cauda broker --rate` at that rate: the rate cauda
#               sustained and CPU per message (user+sys of the process;
#               cauda's includes its consumer, the peer has none);
#   acks:       `cauda broker --acks-matrix` on three brokers (RF 3,
#               min.insync.replicas 2), and acks=1 vs acks=1 with
#               flush.messages=1 (an fsync per append) on one broker.
#
# It starts its own brokers with scripts/kafka.sh (ports 19092… and
# 19192…, data under a temporary directory) and stops them at the end.
# Usage: bench/broker_vs_kafka_tools.sh [ROUNDS=5]
# Needs: java 17, mvn (first fetch), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
cauda=${CAUDA:-target/release/cauda}
[[ -x $cauda ]] || cargo build --release --locked --quiet
cauda=$(realpath "$cauda")
tmp=$(mktemp -d)
one=$tmp/one three=$tmp/three
cleanup() {
    scripts/kafka.sh stop --dir "$one" >/dev/null 2>&1 || true
    scripts/kafka.sh stop --dir "$three" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
boot=$(scripts/kafka.sh start --dir "$one" --port-base 19092 2>/dev/null)
pid=$(cat "$one/node1/kafka.pid")
tool() { scripts/kafka.sh tool "$@" 2>&1 | grep -v -e WARN -e SLF4J; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
summary() { # FILE TAG FIELD -> value in ns
    json "$1" "next(s['summary'] for s in d['summary'] if s['tag']=='$2')$3"
}
median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
echo "# cauda $("$cauda" --version | cut -d' ' -f2) vs Kafka 4.1.1 tools; broker $boot; $(nproc) CPUs; $(date -u +%FT%TZ)"

echo "## e2e: closed loop, acks=1, 1 KiB (peer: 3000 messages; cauda: 3 s)"
peer_avg=() cauda_mean=()
for ((r = 1; r <= rounds; r++)); do
    out=$(tool org.apache.kafka.tools.EndToEndLatency "$boot" e2e-peer-$r 3000 1 1024)
    avg=$(sed -n 's/^Avg latency: \([0-9.]*\) ms/\1/p' <<<"$out")
    pct=$(grep '^Percentiles' <<<"$out")
    "$cauda" broker --bootstrap "$boot" --closed-loop --runtime 3s -q -o "$tmp/e2e.json" --force >/dev/null 2>&1
    mean=$(summary "$tmp/e2e.json" e2e "['mean']")
    p50=$(summary "$tmp/e2e.json" e2e "['percentiles']['50']")
    p99=$(summary "$tmp/e2e.json" e2e "['percentiles']['99']")
    printf 'round %d: peer avg %s ms (%s) | cauda mean %.4f ms, p50 %.4f ms, p99 %.4f ms\n' \
        "$r" "$avg" "$pct" "$(bc -l <<<"$mean/1000000")" "$(bc -l <<<"$p50/1000000")" "$(bc -l <<<"$p99/1000000")"
    peer_avg+=("$avg") cauda_mean+=("$(bc -l <<<"$mean/1000000")")
done
pm=$(median "${peer_avg[@]}") cm=$(median "${cauda_mean[@]}")
printf 'median: peer avg %.4f ms, cauda mean %.4f ms, ratio cauda/peer %.3f (goal <= 1.05)\n' "$pm" "$cm" "$(bc -l <<<"$cm/$pm")"

echo "## publish: 1000/s for 5 s, acks=1, 1 KiB"
peer5=() peer0=() cauda_p50=()
for ((r = 1; r <= rounds; r++)); do
    line5=$(tool org.apache.kafka.tools.ProducerPerformance --topic pp5-$r --num-records 5000 --record-size 1024 \
        --throughput 1000 --producer-props bootstrap.servers="$boot" acks=1 | tail -1)
    line0=$(tool org.apache.kafka.tools.ProducerPerformance --topic pp0-$r --num-records 5000 --record-size 1024 \
        --throughput 1000 --producer-props bootstrap.servers="$boot" acks=1 linger.ms=0 | tail -1)
    "$cauda" broker --bootstrap "$boot" --rate 1000/s --runtime 5s -q -o "$tmp/pub.json" --force >/dev/null 2>&1
    p50=$(summary "$tmp/pub.json" publish.service "['percentiles']['50']")
    mean=$(summary "$tmp/pub.json" publish.service "['mean']")
    a5=$(sed -n 's/.*, \([0-9.]*\) ms avg latency.*/\1/p' <<<"$line5")
    a0=$(sed -n 's/.*, \([0-9.]*\) ms avg latency.*/\1/p' <<<"$line0")
    printf 'round %d: peer (linger 5ms) avg %s ms | peer (linger.ms=0) avg %s ms | cauda publish.service p50 %.4f ms, mean %.4f ms\n' \
        "$r" "$a5" "$a0" "$(bc -l <<<"$p50/1000000")" "$(bc -l <<<"$mean/1000000")"
    echo "  peer (linger 5ms): $line5"
    echo "  peer (linger 0):   $line0"
    peer5+=("$a5") peer0+=("$a0") cauda_p50+=("$(bc -l <<<"$p50/1000000")")
done
m5=$(median "${peer5[@]}") m0=$(median "${peer0[@]}") mc=$(median "${cauda_p50[@]}")
printf 'median: peer avg %.3f ms (linger 5ms), %.3f ms (linger 0); cauda publish.service p50 %.4f ms; ratio to linger-0 peer %.3f (goal <= 1.05)\n' \
    "$m5" "$m0" "$mc" "$(bc -l <<<"$mc/$m0")"

echo "## freeze: 1000/s, broker stopped for 500 ms after 2 s"
freeze() { sleep 2; kill -STOP "$pid"; sleep 0.5; kill -CONT "$pid"; }
freeze & line=$(tool org.apache.kafka.tools.ProducerPerformance --topic ppf --num-records 5000 --record-size 1024 \
    --throughput 1000 --producer-props bootstrap.servers="$boot" acks=1 linger.ms=0 | tail -1); wait
echo "peer (linger 0): $line"
freeze & "$cauda" broker --bootstrap "$boot" --rate 1000/s --runtime 5s -q -o "$tmp/frz.json" --force >/dev/null 2>&1; wait
for tag in publish publish.service e2e; do
    printf 'cauda %-16s p50 %8.3f ms  p99 %8.3f ms  p99.9 %8.3f ms  max %8.3f ms\n' "$tag" \
        "$(bc -l <<<"$(summary "$tmp/frz.json" "$tag" "['percentiles']['50']")/1000000")" \
        "$(bc -l <<<"$(summary "$tmp/frz.json" "$tag" "['percentiles']['99']")/1000000")" \
        "$(bc -l <<<"$(summary "$tmp/frz.json" "$tag" "['percentiles']['99.9']")/1000000")" \
        "$(bc -l <<<"$(summary "$tmp/frz.json" "$tag" "['max']")/1000000")"
done

echo "## throughput: acks=1, 1 KiB"
for ((r = 1; r <= 3; r++)); do
    /usr/bin/time -f '%U %S' -o "$tmp/peer.time" scripts/kafka.sh tool org.apache.kafka.tools.ProducerPerformance \
        --topic tp-$r --num-records 300000 --record-size 1024 --throughput -1 \
        --producer-props bootstrap.servers="$boot" acks=1 >"$tmp/peer.out" 2>&1
    line=$(grep -v WARN "$tmp/peer.out" | tail -1)
    rate=$(sed -n 's/^300000 records sent, \([0-9.]*\) records\/sec.*/\1/p' <<<"$line")
    peer_cpu=$(awk '{print ($1+$2)*1e6/300000}' "$tmp/peer.time")
    /usr/bin/time -f '%U %S' -o "$tmp/cauda.time" "$cauda" broker --bootstrap "$boot" --rate "${rate%.*}/s" \
        --runtime 10s -q -o "$tmp/tp.json" --force >/dev/null 2>&1
    sent=$(json "$tmp/tp.json" "d['broker']['records']['sent']")
    acked=$(json "$tmp/tp.json" "d['broker']['records']['acked']")
    consumed=$(json "$tmp/tp.json" "d['broker']['records']['consumed']")
    dur=$(json "$tmp/tp.json" "d['duration_ns']/1e9")
    cauda_cpu=$(awk -v n="$sent" '{print ($1+$2)*1e6/n}' "$tmp/cauda.time")
    q99=$(summary "$tmp/tp.json" publish.queue "['percentiles']['99']")
    printf 'round %d: peer %s rec/s, %.1f µs CPU/msg | cauda asked %s/s: %s sent, %s acked, %s consumed in %.2f s = %.0f rec/s, %.1f µs CPU/msg (producer+consumer), publish.queue p99 %.1f ms\n' \
        "$r" "$rate" "$peer_cpu" "${rate%.*}" "$sent" "$acked" "$consumed" "$dur" "$(bc -l <<<"$acked/$dur")" "$cauda_cpu" "$(bc -l <<<"$q99/1000000")"
done

echo "## acks on one broker: flush.messages=1 (an fsync per append) vs none, 200/s for 10 s"
for cfg in "" "--topic-config flush.messages=1"; do
    # shellcheck disable=SC2086
    "$cauda" broker --bootstrap "$boot" --rate 200/s --runtime 10s $cfg -q -o "$tmp/fl.json" --force >/dev/null 2>&1
    printf 'acks=1 %-34s publish p50 %8.3f ms  p99 %8.3f ms\n' "${cfg:-(no fsync per append)}" \
        "$(bc -l <<<"$(summary "$tmp/fl.json" publish "['percentiles']['50']")/1000000")" \
        "$(bc -l <<<"$(summary "$tmp/fl.json" publish "['percentiles']['99']")/1000000")"
done
scripts/kafka.sh stop --dir "$one" >/dev/null 2>&1

echo "## acks matrix on three brokers: RF 3, min.insync.replicas 2, 3 partitions, 1000/s for 20 s"
boot3=$(scripts/kafka.sh start --brokers 3 --dir "$three" --port-base 19192 2>/dev/null)
# A fresh cluster's JVMs are cold: the matrix's first run would pay for it.
"$cauda" broker --bootstrap "${boot3%%,*}" --acks all --replication-factor 3 --partitions 3 \
    --rate 1000/s --runtime 20s -q -o "$tmp/cold.json" >/dev/null 2>&1
"$cauda" broker --bootstrap "${boot3%%,*}" --acks-matrix --replication-factor 3 --partitions 3 \
    --topic-config min.insync.replicas=2 --rate 1000/s --runtime 20s -o "$tmp/matrix.json" 2>/dev/null |
    grep -E '^(acks|[01a] |all)|^(acks=|publish +p99|e2e +p99|publish +p50|e2e +p50)' || true
