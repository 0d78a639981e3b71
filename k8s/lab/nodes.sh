#!/usr/bin/env bash
# More nodes for the lab cluster (../shared/k8s/lab), as kind makes them with containers: each one a
# network namespace on this machine with its own containerd, kubelet (its own root dir and cgroup
# root) and kube-proxy, registered with the lab's API server under a node certificate signed by the
# lab's CA, its pods routed through the machine, labelled with a zone. Real kubelets and the real
# scheduler: nothing is simulated. The lab stays as it is (read-only): this reads its settings, CA
# and binaries, and keeps its own state under $K8S_LAB_STATE/nodes.
#
# Usage: k8s/lab/nodes.sh add [N]         N more nodes (default 2): k8s-node-2, k8s-node-3, … in zones
#                                         lab-b, lab-c, … (the lab's own node: lab-a); each gets the
#                                         lab's image archives
#        k8s/lab/nodes.sh lose NAME       the node lost at once, with no word to the API server: its
#                                         kubelet, kube-proxy, containerd and every process of its pods
#                                         SIGKILLed, its network cut (packets to it vanish)
#        k8s/lab/nodes.sh restore NAME    a lost node back: its network, containerd, kubelet, kube-proxy
#        k8s/lab/nodes.sh remove NAME     stopped, its Node deleted, nothing of it left
#        k8s/lab/nodes.sh down            every added node removed (before `cluster.sh down`, which
#                                         knows only its own node)
#        k8s/lab/nodes.sh load ARCHIVE…   images into every node, the lab's own included
#        k8s/lab/nodes.sh ctr NODE ARG…   ctr (namespace k8s.io) on a node's containerd, any node
#        k8s/lab/nodes.sh list            the added nodes and their state
set -euo pipefail
# The lab beside the repository (as .ci/run finds it), or where K8S_LAB says.
LAB=${K8S_LAB:-$(cd "$(dirname "$0")/../.." && pwd)/../shared/k8s/lab}
# The lab's settings: its state and cache, addresses, PATH (its binaries), KUBECONFIG, log().
. "$LAB/lib/common.sh"
NODES=$STATE/nodes

# Node i (2, 3, …): its name, address, pod subnet, zone and the machine's end of its link.
name_of() { echo "k8s-node-$1"; }
index_of() { [[ $1 =~ ^k8s-node-([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 2 ] || die "no such node: $1"; echo "${BASH_REMATCH[1]}"; }
ip_of() { echo "10.250.0.$((9 + $1))"; }
subnet_of() { echo "10.244.$(($1 - 1)).0/24"; }
zone_of() { printf 'lab-%b' "\\x$(printf %x $((96 + $1)))"; }
link_of() { echo "k8sn$1"; }
added() { { ls -d "$NODES"/k8s-node-* 2>/dev/null || true; } | xargs -rn1 basename | sort -V; }

pid_running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# A node's daemon: started in the node's network namespace (and nothing else: it shares the
# machine's mounts, as a node's daemons share its filesystem).
start() { # node component command…
  local dir=$NODES/$1 c=$2; shift 2
  pid_running "$dir/run/$c.pid" && return 0
  setsid nohup nsenter --net="$dir/netns" -- "$@" >> "$dir/logs/$c.log" 2>&1 < /dev/null &
  echo $! > "$dir/run/$c.pid"
}
kill_now() { # node component: SIGKILL, no grace
  local f=$NODES/$1/run/$2.pid
  pid_running "$f" && kill -9 "$(cat "$f")" 2>/dev/null || true
  rm -f "$f"
}
ctr_of() { # node: the address of its containerd
  if [ "$1" = "$NODE_NAME" ]; then echo "$CTR_SOCK"; else echo "$NODES/$1/run/containerd/containerd.sock"; fi
}

render() { # template node-dir index
  local i=$3
  sed -e "s#@STATE@#$2#g" -e "s#@NODE_IP@#$(ip_of "$i")#g" -e "s#@NODE_NAME@#$(name_of "$i")#g" \
      -e "s#@DNS_IP@#$DNS_IP#g" -e "s#@POD_CIDR@#$POD_CIDR#g" -e "s#@POD_SUBNET@#$(subnet_of "$i")#g" "$1"
}

kubeconfig() { # file user cert key
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: k8s-lab
  cluster: {server: "https://$NODE_IP:6443", certificate-authority-data: $(base64 -w0 < "$STATE/pki/ca.crt")}
users:
- name: $2
  user: {client-certificate-data: $(base64 -w0 < "$3"), client-key-data: $(base64 -w0 < "$4")}
contexts:
- name: k8s-lab
  context: {cluster: k8s-lab, user: $2}
current-context: k8s-lab
EOF
}

# The kubelet's certificate: its client identity (system:node:NAME, which NodeRestriction holds it
# to) and its serving certificate for the API server, signed by the lab's CA.
node_pki() { # node-dir index
  local d=$1/pki name ip; name=$(name_of "$2") ip=$(ip_of "$2")
  mkdir -p "$d"; cp "$STATE/pki/ca.crt" "$d/"
  [ -f "$d/kubelet.crt" ] && return 0
  openssl req -newkey rsa:2048 -nodes -keyout "$d/kubelet.key" -out "$d/kubelet.csr" \
    -subj "/CN=system:node:$name/O=system:nodes" 2>/dev/null
  printf '%s\n' 'basicConstraints=CA:FALSE' 'keyUsage=critical,digitalSignature,keyEncipherment' \
    'extendedKeyUsage=serverAuth,clientAuth' "subjectAltName=DNS:$name,IP:$ip" > "$d/kubelet.ext"
  openssl x509 -req -in "$d/kubelet.csr" -CA "$STATE/pki/ca.crt" -CAkey "$STATE/pki/ca.key" \
    -CAserial "$d/ca.srl" -CAcreateserial -out "$d/kubelet.crt" -days 3650 -extfile "$d/kubelet.ext" 2>/dev/null
  rm -f "$d/kubelet.csr" "$d/kubelet.ext"
}

# Its own cgroup root in every hierarchy, so that its pods never mix with another kubelet's.
cgroups() { # create|remove name
  local h
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    [ -d "$h" ] || continue
    if [ "$1" = create ]; then
      [ -f "$h/cgroup.procs" ] || continue
      mkdir -p "$h/$2"
      # a v1 cpuset starts empty: the machine's CPUs and memory nodes
      [ -f "$h/cpuset.cpus" ] && [ ! -s "$h/$2/cpuset.cpus" ] && cat "$h/cpuset.cpus" > "$h/$2/cpuset.cpus" &&
        cat "$h/cpuset.mems" > "$h/$2/cpuset.mems"
      # Its pods weigh for the CPUs what the lab's own node's weigh (its kubelet's kubepods: 2048 shares
      # for 2 CPUs). A new cgroup's default (1024) is one thread's: a node's pods together would count
      # as one busy thread of the control plane, a kubelet or the e2e, and stall for a second at a time
      # whenever those are busy (a drain, a failover, pods starting).
      for f in cpu.shares cpu.weight; do
        if [ -f "$h/kubepods/$f" ] && [ -f "$h/$2/$f" ]; then cat "$h/kubepods/$f" > "$h/$2/$f"; fi
      done
    else
      [ -d "$h/$2" ] && find "$h/$2" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    fi
  done
}

# Its network: a namespace with one link to the machine, the machine routing its address and its
# pods' subnet to it, everything else through the machine (as the lab's own node does). The
# namespace is bound to a file of the node's own, not named in /run/netns: `ip netns add` would mount
# /run/netns over itself and hide the namespaces of the pods already running under it.
network_up() { # index
  local i=$1 n link ip dir; n=$(name_of "$i") link=$(link_of "$i") ip=$(ip_of "$i") dir=$NODES/$(name_of "$i")
  if ! mountpoint -q "$dir/netns"; then
    touch "$dir/netns"
    unshare --net="$dir/netns" true
  fi
  local in=(nsenter --net="$dir/netns")
  if ! ip link show "$link" >/dev/null 2>&1; then
    "${in[@]}" ip link add eth0 type veth peer name "$link" netns $$
    "${in[@]}" ip link set lo up
    "${in[@]}" ip addr add "$ip/32" dev eth0
    "${in[@]}" ip link set eth0 up
    "${in[@]}" ip route add "$NODE_IP/32" dev eth0
    "${in[@]}" ip route add default via "$NODE_IP" dev eth0
    # What kube-proxy and the bridge plugin need, in the namespace's own network stack.
    "${in[@]}" sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 \
      net.bridge.bridge-nf-call-ip6tables=1 net.ipv4.conf.all.route_localnet=1
  fi
  ip link set "$link" up
  ip route replace "$ip/32" dev "$link" src "$NODE_IP"
  ip route replace "$(subnet_of "$i")" via "$ip" dev "$link"
}

node_start() { # index
  local i=$1 n dir; n=$(name_of "$i") dir=$NODES/$(name_of "$i")
  network_up "$i"
  start "$n" containerd containerd --config "$dir/etc/containerd.toml"
  local t; for t in $(seq 1 60); do command ctr --address "$(ctr_of "$n")" version >/dev/null 2>&1 && break; sleep 0.5; done
  kubelet_start "$i"
  start "$n" kube-proxy kube-proxy --config="$dir/etc/kube-proxy.yaml"
}

kubelet_start() { # index (nothing when it runs)
  local i=$1 n dir; n=$(name_of "$i") dir=$NODES/$(name_of "$i")
  start "$n" kubelet kubelet --config="$dir/etc/kubelet.yaml" --kubeconfig="$dir/kubelet.kubeconfig" \
    --root-dir="$dir/kubelet" --hostname-override="$n" --node-ip="$(ip_of "$i")" \
    --node-labels="topology.kubernetes.io/zone=$(zone_of "$i")"
}

# Ready, as the API server says. A kubelet that gave up meanwhile is started again, as systemd's
# Restart= does on a real node: containerd answers before its CRI has recovered the containers it
# had, and a kubelet started then exits ("server is not initialized yet").
node_ready() { # index
  kubelet_start "$1"
  kubectl wait --for=condition=Ready "node/$(name_of "$1")" --timeout=2s
}

# Waits for node_ready; when it does not come, prints what kept the node away (before `down` removes
# its logs with it) and fails.
wait_ready() { # index
  local n c; n=$(name_of "$1")
  (waitfor "node $n Ready" 180 node_ready "$1") && return 0
  kubectl get node "$n" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.message}{"\n"}{end}' \
    >&2 || true
  for c in containerd kubelet kube-proxy; do
    echo "-- $n: the last lines of its $c" >&2
    tail -n 15 "$NODES/$n/logs/$c.log" >&2 || true
  done
  exit 1
}

import_all() { # node archive…
  local n=$1 a; shift
  for a in "$@"; do command ctr --address "$(ctr_of "$n")" -n k8s.io images import "$a" >/dev/null; done
}

add() { # count
  [ -f "$STATE/pki/ca.key" ] && kubectl get --raw /readyz >/dev/null 2>&1 || die "the lab cluster is not up (cluster.sh up)"
  mkdir -p "$NODES"
  kubectl label node "$NODE_NAME" --overwrite "topology.kubernetes.io/zone=$(zone_of 1)" >/dev/null
  local last i n dir new=()
  last=$(added | sed "s/k8s-node-//" | sort -n | tail -1 || true); last=${last:-1}
  for i in $(seq $((last + 1)) $((last + ${1:-2}))); do
    n=$(name_of "$i") dir=$NODES/$(name_of "$i")
    mkdir -p "$dir"/{etc/cni,run,logs,kubelet,pod-logs}
    node_pki "$dir" "$i"
    kubeconfig "$dir/kubelet.kubeconfig" "system:node:$n" "$dir/pki/kubelet.crt" "$dir/pki/kubelet.key"
    kubeconfig "$dir/kube-proxy.kubeconfig" system:kube-proxy "$STATE/pki/kube-proxy.crt" "$STATE/pki/kube-proxy.key"
    render "$LAB/etc/containerd.toml" "$dir" "$i" > "$dir/etc/containerd.toml"
    { render "$LAB/etc/kubelet.yaml" "$dir" "$i"; echo "cgroupRoot: /$n"; } > "$dir/etc/kubelet.yaml"
    render "$LAB/etc/kube-proxy.yaml" "$dir" "$i" > "$dir/etc/kube-proxy.yaml"
    render "$LAB/etc/cni.conflist" "$dir" "$i" > "$dir/etc/cni/10-k8s-lab.conflist"
    printf 'nameserver 127.0.0.1\noptions ndots:1\n' > "$dir/etc/pod-resolv.conf"
    cgroups create "$n"
    node_start "$i"
    new+=("$n")
  done
  # The lab's images (pause, CoreDNS, busybox, the base images), into the new nodes side by side.
  local pids=()
  for n in "${new[@]}"; do import_all "$n" "$CACHE"/images/*.tar & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i"; done
  for n in "${new[@]}"; do wait_ready "$(index_of "$n")"; done
}

lose() { # name
  local n=$1 i p; i=$(index_of "$n")
  # At once: the node's daemons, the shims of its containerd, every process of its pods.
  kill_now "$n" kubelet; kill_now "$n" kube-proxy; kill_now "$n" containerd
  for p in $(ps -eo pid=,args= | awk -v s="$(ctr_of "$n")" 'index($0, s) && /containerd-shim/ {print $1}'); do
    kill -9 "$p" 2>/dev/null || true
  done
  for p in $(find /sys/fs/cgroup/pids/"$n" /sys/fs/cgroup/"$n" -name cgroup.procs -exec cat {} + 2>/dev/null); do
    kill -9 "$p" 2>/dev/null || true
  done
  # Its link down: the machine's routes to it fall through to the lab's blackhole of the pod range,
  # so what was sent to its pods is dropped without an answer, as for a machine switched off.
  ip link set "$(link_of "$i")" down
  log "lost $n"
}

restore() { # name
  local i; i=$(index_of "$1")
  node_start "$i"
  wait_ready "$i"
}

remove() { # name
  local n=$1 i dir m; i=$(index_of "$n") dir=$NODES/$1
  lose "$n" >/dev/null 2>&1 || true
  kubectl delete node "$n" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  # pod network namespaces of this node: those named in its pods' sandboxes are gone with their
  # processes; any left unused are the lab's `down` to sweep, as for its own node.
  for m in $(awk -v s="$dir/" 'index($2, s) == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
  ip link del "$(link_of "$i")" 2>/dev/null || true
  ip route del "$(subnet_of "$i")" 2>/dev/null || true
  ip route del "$(ip_of "$i")/32" 2>/dev/null || true
  umount "$dir/netns" 2>/dev/null || true
  cgroups remove "$n"
  rm -rf "$dir"
  log "removed $n"
}

case "${1:-}" in
  add) add "${2:-2}" ;;
  lose) lose "${2:?node}" ;;
  restore) restore "${2:?node}" ;;
  remove) remove "${2:?node}" ;;
  down) for n in $(added); do remove "$n"; done ;;
  load) # into every node at once: an import waits on the disk as much as it computes
    shift; "$LAB/cluster.sh" load "$@" & pids=($!)
    for n in $(added); do
      pid_running "$NODES/$n/run/containerd.pid" || continue
      import_all "$n" "$@" & pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done ;;
  ctr) n=${2:?node}; shift 2; exec ctr --address "$(ctr_of "$n")" -n k8s.io "$@" ;;
  list)
    for n in $(added); do
      state=stopped; pid_running "$NODES/$n/run/kubelet.pid" && state=running
      echo "$n $(ip_of "$(index_of "$n")") $(zone_of "$(index_of "$n")") $state"
    done ;;
  *) sed -n '2,22p' "$0" >&2; exit 2 ;;
esac
