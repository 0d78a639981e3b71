// The lab cluster's own Traefik (../shared/k8s/lab) set up as k8s/traefik.yaml sets the chart's on
// every other cluster: Traefik's API (its CRDs, from the Go module of the version the lab runs, and
// the RBAC to read them), the objects k8s/traefik.yaml adds (the retry Middleware), and the entry
// point's default middlewares and other arguments; its replica on the lab's own node. Idempotent: a
// second run changes nothing.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { findBinary } from '@suite/kit/testing'
import { root } from '../../charts/test/lib.js'
import { kjson, kubectl, run } from './lib.js'
import { CONTROL_NODE } from './context.js'

const TRAEFIK_API = {
  apiGroups: ['traefik.io'],
  resources: [
    'middlewares', 'middlewaretcps', 'ingressroutes', 'ingressroutetcps', 'ingressrouteudps', 'traefikservices',
    'tlsoptions', 'tlsstores', 'serverstransports', 'serverstransporttcps'
  ],
  verbs: ['get', 'list', 'watch']
}

/** The arguments and objects k8s/traefik.yaml gives Traefik, as the lab's Deployment takes them. */
export function traefikSettings () {
  const values = parse(readFileSync(join(root, 'k8s', 'traefik.yaml'), 'utf8'))
  const args = [
    ...(values.providers.kubernetesCRD?.enabled ? ['--providers.kubernetescrd=true'] : []),
    ...Object.entries(values.ports ?? {}).filter(([, p]) => p.middlewares?.length)
      .map(([name, p]) => `--entrypoints.${name}.http.middlewares=${p.middlewares.join(',')}`),
    ...(values.additionalArguments ?? [])
  ]
  return { args, objects: values.extraObjects ?? [] }
}

export function labTraefik () {
  const deployment = kjson(['get', 'deployment', '-n', 'traefik', 'traefik'])
  const container = deployment.spec.template.spec.containers[0]
  const version = `v${container.image.split(':').pop()}`
  const mod = JSON.parse(
    run(findBinary('go'), ['mod', 'download', '-json', `github.com/traefik/traefik/v3@${version}`]).stdout
  )
  kubectl([
    'apply', '--server-side', '-f',
    join(mod.Dir, 'docs/content/reference/dynamic-configuration/kubernetes-crd-definition-v1.yml')
  ])
  const rbac = [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'lab:traefik-crd' },
      rules: [TRAEFIK_API]
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'lab:traefik-crd' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'lab:traefik-crd' },
      subjects: [
        { kind: 'ServiceAccount', name: deployment.spec.template.spec.serviceAccountName, namespace: 'traefik' }
      ]
    }
  ]
  const { args, objects } = traefikSettings()
  kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...rbac, ...objects] })
  })
  const missing = args.filter((a) => !container.args.includes(a))
  const patch = missing.map((value) => ({ op: 'add', path: '/spec/template/spec/containers/0/args/-', value }))
  // Its one replica stays on the lab's own node, which the e2e never drains nor loses: a rollout
  // would otherwise place it on any node, and the load comes through it.
  const pinned = { 'kubernetes.io/hostname': CONTROL_NODE }
  const pin = JSON.stringify(deployment.spec.template.spec.nodeSelector) !== JSON.stringify(pinned)
  if (pin) patch.push({ op: 'add', path: '/spec/template/spec/nodeSelector', value: pinned })
  if (patch.length) {
    kubectl(['patch', 'deployment', '-n', 'traefik', 'traefik', '--type', 'json', '-p', JSON.stringify(patch)])
    kubectl(['rollout', 'status', '-n', 'traefik', 'deployment/traefik', '--timeout=180s'])
  }
  return `Traefik ${version}: its CRDs, ${objects.length} object(s) and ${args.length} argument(s) ` +
    `of k8s/traefik.yaml${missing.length ? ` (${missing.length} added)` : ''}` +
    `${pin ? `, on ${CONTROL_NODE}` : ''}`
}
