#!/usr/bin/env bash
# Builds the pinned Go tools into $SUITE_TOOLS/go-bin, once: later runs and other clones reuse them.
# Run through `node scripts/provision.js` (npm test does), which sets SUITE_TOOLS and finds Go.
# Prints the directory to put on PATH.
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
# writable copy of the module's folder.
build() { # name module version package-dir
  [ -x "$BIN/$1.$3" ] && return
  echo "tools: building $2@$3 ($4)" >&2
  local started=$SECONDS dir tmp
  dir=$(go mod download -json "$2@$3" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  tmp=$(mktemp -d); cp -r "$dir/." "$tmp"; chmod -R u+w "$tmp"
  (cd "$tmp" && go build -o "$BIN/$1" "$4") >&2
  cp "$BIN/$1" "$BIN/$1.$3"
  rm -rf "$tmp"
  echo "tools: $1 built in $((SECONDS - started)) s" >&2
}

install helm helm.sh/helm/v4/cmd/helm v4.3.1
install kubeconform github.com/yannh/kubeconform/cmd/kubeconform v0.8.0
install vegeta github.com/tsenart/vegeta/v12 v12.13.0
# Run as `helm-unittest CHART_DIR` (the same program the helm plugin runs).
build helm-unittest github.com/helm-unittest/helm-unittest v1.1.2 ./cmd/helm-unittest
# The trace backend of the tests (services/kit/testing/jaeger.js) and of the cluster (k8s/jaeger).
build jaeger github.com/jaegertracing/jaeger v1.76.0 ./cmd/jaeger
echo "$BIN"
