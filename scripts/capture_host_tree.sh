#!/usr/bin/env bash
# Captures the /proc and /sys files `cauda host audit` and the host counters
# read into a directory tree, for `cauda host audit --root DIR` and for test
# fixtures. Read-only on the host; symlinks that name devices (block and
# network `device` links) are kept as links.
#
# usage: scripts/capture_host_tree.sh DEST
set -euo pipefail
dest=${1:?usage: $0 DEST}
mkdir -p "$dest"

copy() { # copy each existing, readable file, keeping its path under $dest
    local f
    for f in "$@"; do
        [[ -f $f && -r $f ]] || continue
        mkdir -p "$dest$(dirname "$f")"
        # /proc and /sys files report size 0: cat, never cp.
        cat "$f" >"$dest$f" 2>/dev/null || rm -f "$dest$f"
    done
}
link() { # keep a symlink's target name
    local l
    for l in "$@"; do
        [[ -L $l ]] || continue
        mkdir -p "$dest$(dirname "$l")"
        ln -sfn "$(readlink "$l")" "$dest$l"
    done
}

copy /proc/cmdline /proc/cpuinfo /proc/swaps /proc/mounts /proc/interrupts \
     /proc/vmstat /proc/stat /proc/diskstats /proc/pressure/{cpu,io,memory} \
     /proc/sys/kernel/{hostname,osrelease,timer_migration,numa_balancing} \
     /proc/sys/net/core/{busy_poll,busy_read,somaxconn} \
     /proc/sys/vm/{swappiness,dirty_ratio,dirty_background_ratio,dirty_bytes,dirty_background_bytes,dirty_expire_centisecs,dirty_writeback_centisecs,stat_interval,zone_reclaim_mode} \
     /proc/irq/*/smp_affinity_list
# init's name, and irqbalance's if it runs (the irqbalance check lists /proc).
copy /proc/1/comm
for c in /proc/[0-9]*/comm; do
    [[ $(cat "$c" 2>/dev/null) == irqbalance ]] && copy "$c"
done
# PM QoS: a 4-byte binary value (opening the file adds no constraint).
if [[ -r /dev/cpu_dma_latency ]]; then
    mkdir -p "$dest/dev"
    head -c 4 /dev/cpu_dma_latency >"$dest/dev/cpu_dma_latency"
fi
cpu=/sys/devices/system/cpu
copy $cpu/{online,possible,present,isolated} $cpu/smt/{control,active} \
     $cpu/cpuidle/{current_driver,current_governor,current_governor_ro,available_governors} \
     $cpu/cpufreq/boost $cpu/intel_pstate/{no_turbo,status} \
     $cpu/cpufreq/policy*/{scaling_governor,scaling_available_governors,energy_performance_preference} \
     $cpu/cpu*/power/pm_qos_resume_latency_us \
     $cpu/cpu*/cpuidle/state*/{name,desc,latency,residency,disable,usage,time,above,below}
copy /sys/devices/system/clocksource/clocksource0/{current_clocksource,available_clocksource}
copy /sys/kernel/mm/transparent_hugepage/{enabled,defrag,khugepaged/defrag}
for b in /sys/block/*; do
    copy "$b"/queue/{scheduler,nr_requests,nomerges,rotational,read_ahead_kb,write_cache,physical_block_size,logical_block_size,optimal_io_size} \
         "$b"/size "$b"/*/start "$b"/*/alignment_offset
    link "$b/device"
done
for n in /sys/class/net/*; do link "$n/device"; done
echo "captured into $dest ($(find "$dest" -type f | wc -l) files)"
