#!/usr/bin/env bash
# Installs the cluster add-ons the suite expects, with helm, in order, at pinned versions:
#   1. traefik                 (namespace traefik)        the Gateway API implementation (Gateway
#                                                         traefik/traefik) and the suite's Ingress of class
#                                                         nginx, through its ingress-nginx provider
#      or, with --ingress-nginx, ingress-nginx (namespace ingress-nginx), retired upstream in March 2026
#   2. registry                (namespace registry)       optional (--registry): an OCI registry on
#                                                         NodePort 30500 for the skaffold dev loop and
#                                                         the charts (k8s/registry.yaml); early, so
#                                                         pushes can begin while the rest installs
#   3. kube-prometheus-stack   (namespace monitoring)     Prometheus (reachable only from Grafana,
#                                                         prometheus-adapter and k6 runners), Grafana
#                                                         with the dashboard sidecar
#   4. k6-operator             (namespace k6-operator-system) with --loadtest: runs the load tests'
#                                                         TestRuns; and only then Prometheus takes
#                                                         remote writes (k8s/loadtest/*.yaml)
#      and Jaeger              (namespace observability)  the trace backend (k8s/jaeger.yaml): OTLP in,
#                                                         Grafana's Jaeger data source
#   5. metrics-server          (namespace kube-system)    CPU metrics for the HPAs
#   6. prometheus-adapter      (namespace monitoring)     optional (--with-adapter): the RPS metric
#   7. cloudnative-pg 1.30.0   (namespace cnpg-system)    optional (--cloudnative-pg): the operator of
#                                                         global.database=cloudnative-pg, from its
#                                                         release manifest
# Usage: k8s/install-addons.sh [--kind | --lab] [--with-adapter] [--registry] [--cloudnative-pg]
#                              [--ingress-nginx] [--loadtest] [--charts DIR]
#   --kind           the kind cluster of k8s/kind.yaml (ingress on ports 80/443, kubelet TLS)
#   --lab            the single-node lab cluster of ../shared/k8s/lab: it brings Traefik and
#                    metrics-server itself, and pulls no image: k8s/lab/<release>.yaml names the ones
#                    built on the machine (k8s/e2e/addon-images.js), Jaeger's included; and it
#                    enforces NetworkPolicies with kube-router (k8s/lab/kube-router.yaml); volumes
#                    come from local-path-provisioner (k8s/lab/local-path.yaml), its default class
#   --charts DIR     the charts' archives (<chart>-<version>.tgz) from DIR instead of their
#                    repositories: no internet needed
#   --loadtest       the load-test set-up: k6-operator, and Prometheus's remote-write receiver (off
#                    otherwise: unauthenticated, it would let any pod that reaches it steer the HPAs);
#                    run the script again without it afterwards to turn the receiver off
#   --with-adapter   also prometheus-adapter, for autoscaling.requestsPerSecond
#   --registry       also the development registry (pushes to and pulls from localhost:30500)
#   --cloudnative-pg also CloudNativePG's operator (on the lab: its release manifest from the Go module,
#                    the image built on the machine)
#   --ingress-nginx  the retired ingress-nginx instead of Traefik (no Gateway API then; set each
#                    service's networkPolicy.ingressController to namespace ingress-nginx,
#                    label app.kubernetes.io/name=ingress-nginx)
# Then: helm dependency build charts/suite && helm install suite charts/suite -n suite --create-namespace
#   (--set gateway.enabled=true for the HTTPRoute on the Gateway traefik/traefik;
#    --set global.tracing.endpoint=http://jaeger.observability:4318 to send the services' traces to Jaeger)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

kind=false lab=false adapter=false registry=false cnpg=false ingress_nginx=false loadtest=false charts=
while [ $# -gt 0 ]; do
  case "$1" in
    --kind) kind=true ;;
    --lab) lab=true ;;
    --loadtest) loadtest=true ;;
    --with-adapter) adapter=true ;;
    --registry) registry=true ;;
    --cloudnative-pg) cnpg=true ;;
    --ingress-nginx) ingress_nginx=true ;;
    --charts) charts=$(cd "$2" && pwd); shift ;;
    *) sed -n '2,45p' "$here/install-addons.sh" >&2; exit 2 ;;
  esac
  shift
done

# On the lab: the nodeSelector of what stays on its own node, which the e2e never drains nor loses.
on_lab_node='nodeSelector: {kubernetes.io/hostname: k8s-node}'

# name, repository URL
repo() { helm repo add "$1" "$2" --force-update >/dev/null; }
if [ -z "$charts" ]; then
  repo traefik https://traefik.github.io/charts
  repo ingress-nginx https://kubernetes.github.io/ingress-nginx
  repo prometheus-community https://prometheus-community.github.io/helm-charts
  repo grafana https://grafana.github.io/helm-charts
  repo metrics-server https://kubernetes-sigs.github.io/metrics-server
  helm repo update >/dev/null
fi

# release, chart, version, namespace, values files (k8s/kind/<release>.yaml too with --kind,
# k8s/lab/<release>.yaml with --lab, k8s/loadtest/<release>.yaml with --loadtest)
install() {
  local release=$1 chart=$2 version=$3 namespace=$4
  local values=(-f "$release.yaml") # a word of the line above cannot use another's value yet
  if $kind && [ -f "kind/$release.yaml" ]; then values+=(-f "kind/$release.yaml"); fi
  if $lab && [ -f "lab/$release.yaml" ]; then values+=(-f "lab/$release.yaml"); fi
  if $loadtest && [ -f "loadtest/$release.yaml" ]; then values+=(-f "loadtest/$release.yaml"); fi
  [ -n "$charts" ] && chart="$charts/${chart#*/}-$version.tgz"
  echo "add-ons: $release $version" >&2
  helm upgrade --install "$release" "$chart" --version "$version" --namespace "$namespace" \
    --create-namespace "${values[@]}" --wait --timeout 10m
}

if $lab; then
  : # the lab serves the Ingress class nginx and the Gateway traefik/traefik with its own Traefik; the
  : # e2e sets it up as traefik.yaml sets the chart's (k8s/e2e/lab-traefik.js: the retry middleware).
  # Its CNI enforces no NetworkPolicy: kube-router's policy controller does (lab/kube-router.yaml).
  echo "add-ons: kube-router v2.1.0 (NetworkPolicy enforcement), local-path-provisioner v0.0.30" >&2
  kubectl apply -f lab/kube-router.yaml -f lab/local-path.yaml
  kubectl rollout status -n kube-system daemonset/kube-router --timeout=3m
  kubectl rollout status -n local-path-storage deploy/local-path-provisioner --timeout=3m
elif $ingress_nginx; then
  install ingress-nginx ingress-nginx/ingress-nginx 4.15.1 ingress-nginx
else
  install traefik traefik/traefik 39.0.9 traefik
  kubectl apply -f ingressclass-nginx.yaml
fi
if $registry; then
  echo "add-ons: registry (crane v0.22.1)" >&2
  kubectl create namespace registry --dry-run=client -o yaml | kubectl apply -f -
  kubectl label namespace registry pod-security.kubernetes.io/enforce=restricted --overwrite
  if $lab; then
    # On the lab's own node, which the e2e never drains nor loses: moved, the registry forgets its tags.
    sed -e 's#gcr.io/go-containerregistry/crane:#localhost/crane:#' \
      -e "s#^      automountServiceAccountToken: false\$#&\\n      $on_lab_node#" \
      registry.yaml | kubectl apply -n registry -f -
  else
    kubectl apply -n registry -f registry.yaml
  fi
  kubectl rollout status -n registry deploy/registry --timeout=3m
fi
# Pod Security "restricted" for the monitoring stack where its pods meet it: all of them but
# node-exporter (host network, PID and paths), which the lab leaves out; elsewhere only warned about.
kubectl create namespace monitoring --dry-run=client -o yaml | kubectl apply -f -
kubectl label namespace monitoring "pod-security.kubernetes.io/$($lab && echo enforce || echo warn)=restricted" --overwrite
install kube-prometheus-stack prometheus-community/kube-prometheus-stack 88.5.3 monitoring
echo "add-ons: jaeger 2.13.0" >&2
kubectl create namespace observability --dry-run=client -o yaml | kubectl apply -f -
kubectl label namespace observability pod-security.kubernetes.io/enforce=restricted --overwrite
if $lab; then
  sed 's#cr.jaegertracing.io/jaegertracing/jaeger:#localhost/jaeger:#' jaeger.yaml | kubectl apply -n observability -f -
else
  kubectl apply -n observability -f jaeger.yaml
fi
kubectl rollout status -n observability deploy/jaeger --timeout=5m
if $loadtest; then
  install k6-operator grafana/k6-operator 4.6.0 k6-operator-system
fi
if ! $lab; then
  install metrics-server metrics-server/metrics-server 3.13.1 kube-system
fi
if $adapter; then
  install prometheus-adapter prometheus-community/prometheus-adapter 5.3.0 monitoring
fi
if $cnpg; then
  echo "add-ons: cloudnative-pg 1.30.0" >&2
  release=https://github.com/cloudnative-pg/cloudnative-pg/releases/download/v1.30.0/cnpg-1.30.0.yaml
  if $lab; then
    # The release manifest the Go module holds, its images the ones built on the machine; the operator
    # on the lab's own node, which the e2e never loses: a lost node that holds the operator holds up the
    # database's failover until the operator runs elsewhere (k8s/README.md, Several nodes).
    dir=$(go mod download -json github.com/cloudnative-pg/cloudnative-pg@v1.30.0 | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    sed -e 's#ghcr.io/cloudnative-pg/cloudnative-pg:1.30.0#localhost/cloudnative-pg:1.30.0#' \
      -e 's#imagePullPolicy: Always#imagePullPolicy: IfNotPresent#' \
      -e "s#^      serviceAccountName: cnpg-manager\$#&\\n      $on_lab_node#" \
      "$dir/releases/cnpg-1.30.0.yaml" |
      kubectl apply --server-side --force-conflicts -f - >/dev/null
  else
    kubectl apply --server-side --force-conflicts -f "$release" >/dev/null
  fi
  kubectl rollout status -n cnpg-system deploy/cnpg-controller-manager --timeout=5m
fi
echo "add-ons: done" >&2
