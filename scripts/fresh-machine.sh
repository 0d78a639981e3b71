#!/usr/bin/env bash
# The README's quick start on a fresh machine: a Debian bookworm root made with mmdebstrap (as
# ../shared/k8s/lab makes its images) that has Debian's standard packages, git, and Node 24 (this
# machine's node and npm, copied in), nothing else; a clone of this repository's HEAD in it; then the
# two commands as written, timed: `npm start` until the suite listens, and `npm test`, which installs
# what it needs itself (scripts/provision.js: apt packages, Go, the pinned Go tools). Prints each
# command's time and what the first run left on disk. The root is removed at the end.
#   bash scripts/fresh-machine.sh        (as root: mmdebstrap, chroot and mounts; NODE=path of node 24)
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "fresh-machine: run as root (mmdebstrap, chroot, mounts)" >&2; exit 2; }
command -v mmdebstrap >/dev/null || { echo "fresh-machine: apt-get install mmdebstrap" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
node=${NODE:-$(command -v node)}
"$node" --version | grep -q '^v24\.' || { echo "fresh-machine: $node is not Node 24 (set NODE)" >&2; exit 2; }
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
root=$(mktemp -d /var/tmp/suite-fresh.XXXXXX)
mounts=(proc sys dev dev/pts dev/shm root/shared/k8s)
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "$root/${mounts[i]}" 2>/dev/null || true; done
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)

started=$(date +%s)
echo "fresh-machine: mmdebstrap bookworm into $root"
mmdebstrap -q --variant=standard --include=git,ca-certificates bookworm "$root" ${mirror:+"$mirror"}
# This machine's extra certificate authorities (a TLS-intercepting proxy), as the lab's images get them.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null 2>&1
fi
install -m 0755 "$node" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/lib/node_modules"
cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
cp /etc/resolv.conf "$root/etc/resolv.conf"
git clone -q "$repo" "$root/root/suite"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys" # with its cgroup mounts: the WORKERS test reads the CPU quota there
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t tmpfs -o size=2g tmpfs "$root/dev/shm"
# The offline charts and Kubernetes schemas the chart tests read, beside the clone as beside this one.
if [ -d "$repo/../shared/k8s" ]; then
  mkdir -p "$root/root/shared/k8s"
  mount --bind -o ro "$repo/../shared/k8s" "$root/root/shared/k8s"
fi
base=$(du -sm --one-file-system "$root" | cut -f1)
echo "fresh-machine: root ready in $(($(date +%s) - started)) s, $base MB (Debian standard, git, Node $("$node" --version), npm)"

# In the root: only the README's commands, with a clean environment (no tools folder, no caches).
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin \
  LANG=C.UTF-8 TERM=dumb NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt /bin/bash -euo pipefail -c '
cd /root/suite
t0=$(date +%s)
setsid npm start > /tmp/start.log 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q "suite: listening on" /tmp/start.log && break; kill -0 $pid 2>/dev/null || break; sleep 1; done
grep -q "suite: listening on" /tmp/start.log || { cat /tmp/start.log; echo "fresh-machine: npm start did not become ready"; exit 1; }
echo "fresh-machine: npm start: ready in $(($(date +%s) - t0)) s"
kill -TERM -- -$pid; wait $pid 2>/dev/null || true
t0=$(date +%s)
npm test > /tmp/test.log 2>&1 || { tail -80 /tmp/test.log; echo "fresh-machine: npm test FAILED after $(($(date +%s) - t0)) s"; exit 1; }
grep -E "^provision: " /tmp/test.log || true
tail -25 /tmp/test.log
echo "fresh-machine: npm test: passed in $(($(date +%s) - t0)) s"
'
after=$(du -sm --one-file-system "$root" | cut -f1)
cache() { local s; s=$(du -sm "$root/root/$1" 2>/dev/null | cut -f1); echo "${s:-0}"; }
echo "fresh-machine: disk: $((after - base)) MB added by the first run: tools folder $(cache .cache/suite-tools) MB, Go's caches $(($(cache go) + $(cache .cache/go-build))) MB, npm's cache $(cache .npm) MB, node_modules $(cache suite/node_modules) MB, the rest (apt's packages) besides"
echo "fresh-machine: total $(($(date +%s) - started)) s"
