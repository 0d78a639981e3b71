#!/usr/bin/env bash
# Builds the pinned Go tools into $SUITE_TOOLS/go-bin, once: later runs and other clones reuse them.
# Run through `node scripts/provision.js` (npm test does), which sets SUITE_TOOLS and finds Go.
# Prints the directory to put on PATH.
#   bash scripts/tools.sh cluster   also the cluster add-ons' programs, static, for the images the
#                                   lab cluster cannot pull (k8s/e2e/addon-images.js), and skaffold
set -euo pipefail
TOOLS="${SUITE_TOOLS:?run it through node scripts/provision.js, which sets SUITE_TOOLS}"
BIN="$TOOLS/go-bin"
export GOBIN="$BIN"
mkdir -p "$BIN"
exec 9>"$TOOLS/.go-tools.lock"
flock 9 # two runs on one machine build one after the other, never the same tool twice

install() { # name module version
  [ -x "$BIN/$1.$3" ] && return
  echo "tools: go install $2@$3" >&2
  go install "$2@$3" >&2
  cp "$BIN/$1" "$BIN/$1.$3" # the version-stamped copy marks this pinned install as done
}

# A module whose go.mod has replace directives, which go install refuses: built from its source, in a
# writable copy of the module's folder. tags: go build -tags; prepare: a shell command run in the copy
# first.
build() { # name module version package-dir [tags] [prepare]
  [ -x "$BIN/$1.$3" ] && return
  echo "tools: building $2@$3 ($4)" >&2
  local started=$SECONDS dir tmp
  dir=$(go mod download -json "$2@$3" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  tmp=$(mktemp -d); cp -r "$dir/." "$tmp"; chmod -R u+w "$tmp"
  (cd "$tmp" && eval "${6:-true}" && GOWORK=off go build -mod=mod -trimpath -tags "${5:-}" -o "$BIN/$1" "$4") >&2
  cp "$BIN/$1" "$BIN/$1.$3"
  rm -rf "$tmp"
  echo "tools: $1 built in $((SECONDS - started)) s" >&2
}

# The lab cluster (../shared/k8s/lab) builds the same Traefik and helm 3 into its own cache: where it
# has, they are copied from there rather than built a second time (.ci/run builds the lab first).
LAB_BIN="${K8S_LAB_CACHE:-$HOME/.cache/k8s-lab}/bin"
from_lab() { # name version target
  [ -x "$3.$2" ] && return
  [ -x "$LAB_BIN/$1" ] && [ "$(cat "$LAB_BIN/$1.version" 2>/dev/null)" = "$2" ] || return 1
  echo "tools: $1 $2 from the lab's cache" >&2
  mkdir -p "$(dirname "$3")"
  cp "$LAB_BIN/$1" "$3"
  cp "$3" "$3.$2"
}

install helm helm.sh/helm/v4/cmd/helm v4.3.1
install kubeconform github.com/yannh/kubeconform/cmd/kubeconform v0.8.0
install vegeta github.com/tsenart/vegeta/v12 v12.13.0
# Run as `helm-unittest CHART_DIR` (the same program the helm plugin runs).
build helm-unittest github.com/helm-unittest/helm-unittest v1.1.2 ./cmd/helm-unittest
# The trace backend of the tests (services/kit/testing/jaeger.js) and of the cluster (k8s/jaeger).
build jaeger github.com/jaegertracing/jaeger v1.76.0 ./cmd/jaeger
# The edge proxy of the lab cluster, at its version: charts/test/retries.test.js runs the chart's retry
# Middleware on it.
from_lab traefik v3.6.12 "$BIN/traefik" || build traefik github.com/traefik/traefik/v3 v3.6.12 ./cmd/traefik
if [ "${1:-}" = cluster ]; then
  # Static (no libc): they run in images of their own. The version a program prints comes from its
  # module's own build info.
  export CGO_ENABLED=0
  # Its go.mod replaces its API and client modules with folders its module zip leaves out: their
  # published versions instead.
  po=github.com/prometheus-operator/prometheus-operator
  po_mods="go mod edit -dropreplace=$po/pkg/apis/monitoring -dropreplace=$po/pkg/client -require=$po/pkg/apis/monitoring@v0.93.1 -require=$po/pkg/client@v0.93.1"
  build prometheus-operator $po v0.93.1 ./cmd/operator "" "$po_mods"
  build prometheus-config-reloader $po v0.93.1 ./cmd/prometheus-config-reloader "" "$po_mods"
  build prometheus-adapter sigs.k8s.io/prometheus-adapter v0.12.0 ./cmd/adapter
  build kube-state-metrics k8s.io/kube-state-metrics/v2 v2.20.0 .
  # Prometheus and Alertmanager at the chart's versions, without their web UIs (built by npm upstream,
  # not part of the modules): their APIs are what the suite uses. Prometheus with Kubernetes service
  # discovery alone, the only one the operator configures here.
  build prometheus github.com/prometheus/prometheus v0.314.0 ./cmd/prometheus remove_all_sd,enable_kubernetes_sd
  build alertmanager github.com/prometheus/alertmanager v0.34.0 ./cmd/alertmanager "" "mkdir -p ui/app/dist && echo 'The web UI is not built here: use the API.' > ui/app/dist/index.html"
  # The dev loop: skaffold, and crane (its `registry serve` is the cluster's development registry,
  # k8s/registry.yaml).
  build skaffold github.com/GoogleContainerTools/skaffold/v2 v2.16.1 ./cmd/skaffold
  # skaffold 2.16 runs helm 3 (its post-renderer is a program; helm 4 made post-renderers plugins):
  # kept apart, go-bin/helm3/helm, first on PATH for skaffold only.
  if ! from_lab helm v3.22.0 "$BIN/helm3/helm" && [ ! -x "$BIN/helm3/helm.v3.22.0" ]; then
    echo "tools: go install helm.sh/helm/v3/cmd/helm@v3.22.0 (for skaffold)" >&2
    GOBIN="$BIN/helm3" go install helm.sh/helm/v3/cmd/helm@v3.22.0 >&2
    cp "$BIN/helm3/helm" "$BIN/helm3/helm.v3.22.0"
  fi
  install crane github.com/google/go-containerregistry/cmd/crane v0.22.1
  # The lab's NetworkPolicy enforcer (k8s/lab/kube-router.yaml): kube-router, run as its policy
  # controller only.
  install kube-router github.com/cloudnativelabs/kube-router/v2/cmd/kube-router v2.1.0
  # CloudNativePG's operator, whose image also carries the instance manager it copies into each
  # PostgreSQL pod; and the lab's volumes for its instances (k8s/lab/local-path.yaml).
  build cnpg-manager github.com/cloudnative-pg/cloudnative-pg v1.30.0 ./cmd/manager
  install local-path-provisioner github.com/rancher/local-path-provisioner v0.0.30
  # Releases (scripts/release.js): the images' SBOMs, signatures and attestations.
  install syft github.com/anchore/syft/cmd/syft v1.57.1
  install cosign github.com/sigstore/cosign/v3/cmd/cosign v3.1.3
fi
echo "$BIN"
