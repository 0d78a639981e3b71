#!/usr/bin/env bash
# Installs the cluster add-ons the suite expects, with helm, in order, at pinned versions:
#   1. traefik                 (namespace traefik)        the Gateway API implementation (Gateway
#                                                         traefik/traefik) and the suite's Ingress of class
#                                                         nginx, through its ingress-nginx provider
#      or, with --ingress-nginx, ingress-nginx (namespace ingress-nginx), retired upstream in March 2026
#   2. kube-prometheus-stack   (namespace monitoring)     Prometheus (reachable only from Grafana,
#                                                         prometheus-adapter and k6 runners), Grafana
#                                                         with the dashboard sidecar
#   3. k6-operator             (namespace k6-operator-system) with --loadtest: runs the load tests'
#                                                         TestRuns; and only then Prometheus takes
#                                                         remote writes (k8s/loadtest/*.yaml)
#      and Jaeger              (namespace observability)  the trace backend (k8s/jaeger.yaml): OTLP in,
#                                                         Grafana's Jaeger data source
#   4. metrics-server          (namespace kube-system)    CPU metrics for the HPAs
#   5. prometheus-adapter      (namespace monitoring)     optional (--with-adapter): the RPS metric
# Usage: k8s/install-addons.sh [--kind] [--with-adapter] [--ingress-nginx] [--loadtest]
#   --kind           the kind cluster of k8s/kind.yaml (ingress on ports 80/443, kubelet TLS)
#   --loadtest       the load-test set-up: k6-operator, and Prometheus's remote-write receiver (off
#                    otherwise: unauthenticated, it would let any pod that reaches it steer the HPAs);
#                    run the script again without it afterwards to turn the receiver off
#   --with-adapter   also prometheus-adapter, for autoscaling.requestsPerSecond
#   --ingress-nginx  the retired ingress-nginx instead of Traefik (no Gateway API then; set each
#                    service's networkPolicy.ingressController to namespace ingress-nginx,
#                    label app.kubernetes.io/name=ingress-nginx)
# Then: helm dependency build charts/suite && helm install suite charts/suite -n suite --create-namespace
#   (--set gateway.enabled=true for the HTTPRoute on the Gateway traefik/traefik;
#    --set global.tracing.endpoint=http://jaeger.observability:4318 to send the services' traces to Jaeger)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

kind=false adapter=false ingress_nginx=false loadtest=false
for arg in "$@"; do
  case "$arg" in
    --kind) kind=true ;;
    --loadtest) loadtest=true ;;
    --with-adapter) adapter=true ;;
    --ingress-nginx) ingress_nginx=true ;;
    *) sed -n '2,25p' "$here/install-addons.sh" >&2; exit 2 ;;
  esac
done

# name, repository URL
repo() { helm repo add "$1" "$2" --force-update >/dev/null; }
repo traefik https://traefik.github.io/charts
repo ingress-nginx https://kubernetes.github.io/ingress-nginx
repo prometheus-community https://prometheus-community.github.io/helm-charts
repo grafana https://grafana.github.io/helm-charts
repo metrics-server https://kubernetes-sigs.github.io/metrics-server
helm repo update >/dev/null

# release, chart, version, namespace, values files (k8s/kind/<release>.yaml too with --kind,
# k8s/loadtest/<release>.yaml too with --loadtest)
install() {
  local release=$1 chart=$2 version=$3 namespace=$4 values=(-f "$release.yaml")
  if $kind && [ -f "kind/$release.yaml" ]; then values+=(-f "kind/$release.yaml"); fi
  if $loadtest && [ -f "loadtest/$release.yaml" ]; then values+=(-f "loadtest/$release.yaml"); fi
  echo "add-ons: $release $version" >&2
  helm upgrade --install "$release" "$chart" --version "$version" --namespace "$namespace" \
    --create-namespace "${values[@]}" --wait --timeout 10m
}

if $ingress_nginx; then
  install ingress-nginx ingress-nginx/ingress-nginx 4.15.1 ingress-nginx
else
  install traefik traefik/traefik 39.0.9 traefik
  kubectl apply -f ingressclass-nginx.yaml
fi
install kube-prometheus-stack prometheus-community/kube-prometheus-stack 88.5.3 monitoring
echo "add-ons: jaeger 2.13.0" >&2
kubectl create namespace observability --dry-run=client -o yaml | kubectl apply -f -
kubectl label namespace observability pod-security.kubernetes.io/enforce=restricted --overwrite
kubectl apply -n observability -f jaeger.yaml
kubectl rollout status -n observability deploy/jaeger --timeout=5m
if $loadtest; then
  install k6-operator grafana/k6-operator 4.6.0 k6-operator-system
fi
install metrics-server metrics-server/metrics-server 3.13.1 kube-system
if $adapter; then
  install prometheus-adapter prometheus-community/prometheus-adapter 5.3.0 monitoring
fi
echo "add-ons: done" >&2
