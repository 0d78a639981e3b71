#!/usr/bin/env bash
# Installs the cluster add-ons the suite expects, with helm, in order, at pinned versions:
#   1. ingress-nginx           (namespace ingress-nginx)  routes the suite's Ingress
#   2. kube-prometheus-stack   (namespace monitoring)     Prometheus (remote-write receiver for k6),
#                                                         Grafana with the dashboard sidecar
#   3. k6-operator             (namespace k6-operator-system) runs the load tests' TestRuns
#   4. metrics-server          (namespace kube-system)    CPU metrics for the HPAs
#   5. prometheus-adapter      (namespace monitoring)     optional (--with-adapter): the RPS metric
# Usage: k8s/install-addons.sh [--kind] [--with-adapter]
#   --kind          the kind cluster of k8s/kind.yaml (ingress on ports 80/443, kubelet TLS)
#   --with-adapter  also prometheus-adapter, for autoscaling.requestsPerSecond
# Then: helm dependency build charts/suite && helm install suite charts/suite -n suite --create-namespace
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

kind=false adapter=false
for arg in "$@"; do
  case "$arg" in
    --kind) kind=true ;;
    --with-adapter) adapter=true ;;
    *) sed -n '2,14p' "$here/install-addons.sh" >&2; exit 2 ;;
  esac
done

# name, repository URL
repo() { helm repo add "$1" "$2" --force-update >/dev/null; }
repo ingress-nginx https://kubernetes.github.io/ingress-nginx
repo prometheus-community https://prometheus-community.github.io/helm-charts
repo grafana https://grafana.github.io/helm-charts
repo metrics-server https://kubernetes-sigs.github.io/metrics-server
helm repo update >/dev/null

# release, chart, version, namespace, values files (k8s/kind/<release>.yaml too with --kind)
install() {
  local release=$1 chart=$2 version=$3 namespace=$4 values=(-f "$release.yaml")
  if $kind && [ -f "kind/$release.yaml" ]; then values+=(-f "kind/$release.yaml"); fi
  echo "add-ons: $release $version" >&2
  helm upgrade --install "$release" "$chart" --version "$version" --namespace "$namespace" \
    --create-namespace "${values[@]}" --wait --timeout 10m
}

install ingress-nginx ingress-nginx/ingress-nginx 4.15.1 ingress-nginx
install kube-prometheus-stack prometheus-community/kube-prometheus-stack 88.5.3 monitoring
install k6-operator grafana/k6-operator 4.6.0 k6-operator-system
install metrics-server metrics-server/metrics-server 3.13.1 kube-system
if $adapter; then
  install prometheus-adapter prometheus-community/prometheus-adapter 5.3.0 monitoring
fi
echo "add-ons: done" >&2
