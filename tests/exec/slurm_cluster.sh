#!/usr/bin/env bash
# A throwaway one-node Slurm cluster on localhost, for tests.
#
#   tests/exec/slurm_cluster.sh start DIR   # prints `export SLURM_CONF=DIR/slurm.conf`
#   tests/exec/slurm_cluster.sh stop DIR
#
# Everything lives under DIR: a fresh munge key and munged (run as user munge, its own socket),
# slurm.conf with its own ports, slurmctld and slurmd state, logs and pid files. Needs root and
# Debian's slurm-wlm (22.05) and munge. Exits 77 (skip) when they are missing or not root.
# Configuration known to work in a container: auth/munge, proctrack/linuxproc, task/none,
# select/cons_tres, no accounting (sacct is unavailable; the executor then asks scontrol).
set -euo pipefail

cmd=${1:?usage: slurm_cluster.sh start|stop DIR}
dir=${2:?usage: slurm_cluster.sh start|stop DIR}
dir=$(realpath -m "$dir")

stop_cluster() {
  for f in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    if [[ -s $f ]]; then
      pid=$(cat "$f")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$f"
    fi
  done
}

if [[ $cmd == stop ]]; then
  stop_cluster
  exit 0
fi
[[ $cmd == start ]] || { echo "usage: slurm_cluster.sh start|stop DIR" >&2; exit 2; }

if [[ $(id -u) -ne 0 ]]; then echo "slurm_cluster.sh: needs root" >&2; exit 77; fi
for p in slurmctld slurmd sbatch munged mungekey; do
  command -v "$p" >/dev/null || [[ -x /usr/sbin/$p ]] ||
    { echo "slurm_cluster.sh: $p missing (apt-get install slurm-wlm munge)" >&2; exit 77; }
done
export PATH=$PATH:/usr/sbin
id munge >/dev/null 2>&1 || { echo "slurm_cluster.sh: no user munge" >&2; exit 77; }

mkdir -p "$dir"/{munge,state,spool,log}
chmod 755 "$dir"
chown munge: "$dir/munge"
chmod 700 "$dir/munge"
rm -f "$dir/munge/munge.key"
mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 ||
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
chown munge: "$dir/munge/munge.key"
chmod 400 "$dir/munge/munge.key"
runuser -u munge -- munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/munged.seed" --force
chmod 711 "$dir/munge"

# Two free ports for slurmctld and slurmd.
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
cat > "$dir/slurm.conf" <<CONF
ClusterName=kforgeci
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
MailProg=/bin/true
MinJobAge=600
NodeName=kforgeci NodeAddr=127.0.0.1 NodeHostname=$(hostname -s) CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -i
slurmd -N kforgeci
for _ in $(seq 100); do
  if sinfo -h -o %T 2>/dev/null | grep -q idle; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
echo "slurm_cluster.sh: the node did not become idle; logs in $dir/log" >&2
tail -20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
stop_cluster
exit 1
