# lab_configs.sh - sourced by observer_effect.sh and blame_cost.sh: the
# lab's probe configurations, their 256 MiB disk file, and the loopback
# `cauda serve` the net ones talk to.
#
# Needs before sourcing: $cauda (the binary), $tmp (a directory removed on
# exit), $port (the serve port). Defines `configs` (one per line: name |
# series tag | serve placement, "" or "CPU PROTO" | client CPUs | cauda
# arguments), `keep_configs NAME...` (keeps only those named, when any
# are), `start_serve CPU PROTO`, `stop_serve`, and `serve_pid` for the
# caller's cleanup.
# shellcheck shell=bash

serve_pid=
file="$tmp/observer.dat"
"$cauda" disk --file "$file" --size 256M --runtime 200ms -q -o "$tmp/prep.json" >/dev/null

# shellcheck disable=SC2034 # used by the scripts that source this one
configs=(
    "timer-1ms|wakeup||1|timer --interval 1ms"
    "hiccup|hiccup||1|hiccup"
    "disk-randread-qd1|read||1|disk --file $file --rw randread --bs 4k --iodepth 1"
    "disk-randwrite-qd32|write||1|disk --file $file --rw randwrite --bs 4k --iodepth 32"
    "disk-randread-2000/s|read||1|disk --file $file --rw randread --bs 4k --rate 2000/s"
    "net-tcp-same-cpu|rtt|1 tcp|1|net --connect 127.0.0.1:$port --proto tcp"
    "net-tcp-two-cpus|rtt|0 tcp|1|net --connect 127.0.0.1:$port --proto tcp"
    "net-udp-same-cpu|rtt|1 udp|1|net --connect 127.0.0.1:$port --proto udp"
    "net-udp-two-cpus|rtt|0 udp|1|net --connect 127.0.0.1:$port --proto udp"
    "net-tcp-gap-500us|rtt|0 tcp|1|net --connect 127.0.0.1:$port --proto tcp --gap 500us"
    "net-tcp-10000/s|rtt|0 tcp|1|net --connect 127.0.0.1:$port --proto tcp --rate 10000/s"
)

keep_configs() { # NAME... (none: keep all)
    (($# > 0)) || return 0
    local wanted=" $* " kept=() c
    for c in "${configs[@]}"; do [[ $wanted == *" ${c%%|*} "* ]] && kept+=("$c"); done
    configs=("${kept[@]}")
}

start_serve() { # CPU PROTO
    local udp=
    [[ $2 == udp ]] && udp=--udp
    # shellcheck disable=SC2086
    taskset -c "$1" "$cauda" serve --listen "127.0.0.1:$port" $udp 2>/dev/null &
    serve_pid=$!
    sleep 0.3
}

stop_serve() {
    [[ -n $serve_pid ]] && kill -INT "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null || true
    serve_pid=
}
