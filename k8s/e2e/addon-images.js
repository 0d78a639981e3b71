// The add-ons' images for a cluster that pulls none (the lab): each program built on this machine
// from its Go module (scripts/tools.sh cluster), at the path and with the entrypoint of the upstream
// image it stands in for, so that the upstream charts run it unchanged (k8s/lab/*.yaml names them).
// Each image is built once into an OCI archive in the tools folder, then loaded into the nodes on
// every run.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, renameSync } from 'node:fs'
import { join } from 'node:path'
import { goBinDir, toolsDir } from '@suite/kit/testing'
import { root } from '../../charts/test/lib.js'
import { run, runAsync } from './lib.js'

// name: { tag, program (in go-bin), path in the image, entrypoint (none: the chart's args start with the
// program), link (another path that names the program, and is then the entrypoint), and for a node
// agent: root (runs as root), packages (Debian's, installed in the image) }
const GOARCH = { x64: 'amd64', arm64: 'arm64' }[process.arch]
export const ADDON_IMAGES = {
  'prometheus-operator': { tag: 'v0.93.1', program: 'prometheus-operator', path: '/bin/operator', entrypoint: true },
  'prometheus-config-reloader': {
    tag: 'v0.93.1', program: 'prometheus-config-reloader', path: '/bin/prometheus-config-reloader', entrypoint: true
  },
  'kube-state-metrics': {
    tag: 'v2.20.0', program: 'kube-state-metrics', path: '/kube-state-metrics', entrypoint: true
  },
  'prometheus-adapter': { tag: 'v0.12.0', program: 'prometheus-adapter', path: '/adapter', entrypoint: false },
  jaeger: { tag: '2.13.0', program: 'jaeger', path: '/cmd/jaeger/jaeger-linux', entrypoint: true },
  prometheus: { tag: 'v3.14.0', program: 'prometheus', path: '/bin/prometheus', entrypoint: true },
  alertmanager: { tag: 'v0.34.0', program: 'alertmanager', path: '/bin/alertmanager', entrypoint: true },
  crane: { tag: 'v0.22.1', program: 'crane', path: '/ko-app/crane', entrypoint: true },
  // CloudNativePG's operator; its bootstrap init container copies /manager into PostgreSQL's pods. It
  // learns the architectures it can serve from the names operator/manager_<GOARCH>, as upstream's image.
  'cloudnative-pg': {
    tag: '1.30.0', program: 'cnpg-manager', path: `/operator/manager_${GOARCH}`, link: '/manager', entrypoint: true
  },
  // The lab's volumes (k8s/lab/local-path.yaml): its manifest runs the program by name.
  'local-path-provisioner': {
    tag: 'v0.0.30', program: 'local-path-provisioner', path: '/usr/bin/local-path-provisioner', entrypoint: false
  },
  // The lab's NetworkPolicy enforcer (k8s/lab/kube-router.yaml): iptables and ipset of the host's kind.
  'kube-router': {
    tag: 'v2.1.0',
    program: 'kube-router',
    path: '/usr/local/bin/kube-router',
    entrypoint: true,
    root: true,
    packages: ['iptables', 'ipset']
  }
}

const BUILDAH = { STORAGE_DRIVER: 'vfs', BUILDAH_ISOLATION: 'chroot' }
const archives = () => join(toolsDir(), 'images')

/**
 * Each add-on image's archive, built where missing (the Go programs are built by `scripts/tools.sh
 * cluster` first). `base`: the Debian image they sit on (the lab's localhost/debian:bookworm).
 * Resolves to the archives' paths, to load into the nodes.
 */
export async function addonImages ({ base = 'localhost/debian:bookworm', say = (m) => console.error(m) } = {}) {
  mkdirSync(archives(), { recursive: true })
  const built = []
  const missing = Object.entries(ADDON_IMAGES).filter(([name, i]) => !existsSync(archiveOf(name, i)))
  // Also the e2e's own tools (skaffold, crane): each built once, a no-op afterwards.
  run('bash', [join(root, 'scripts', 'tools.sh'), 'cluster'], { env: { SUITE_TOOLS: toolsDir() } })
  for (const [name, image] of missing) {
    const started = Date.now()
    const ref = `localhost/${name}:${image.tag}`
    const ctr = run('buildah', ['from', '--quiet', base], { env: BUILDAH }).stdout.trim()
    try {
      if (image.packages) {
        // apt from the machine's network, as `cluster.sh images` builds the base images.
        const install = 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ' +
          `--no-install-recommends ${image.packages.join(' ')} && rm -rf /var/lib/apt/lists/*`
        await runAsync('buildah', ['run', ctr, '--', 'sh', '-c', install], { env: BUILDAH })
      }
      run('buildah', [
        'run', ctr, '--', 'mkdir', '-p', image.path.slice(0, image.path.lastIndexOf('/')) || '/'
      ], { env: BUILDAH })
      run('buildah', ['copy', '--chmod', '0755', ctr, join(goBinDir(), image.program), image.path], { env: BUILDAH })
      if (image.link) run('buildah', ['run', ctr, '--', 'ln', '-s', image.path, image.link], { env: BUILDAH })
      run('buildah', [
        'config', '--user', image.root ? '0:0' : '65534:65534',
        '--entrypoint', image.entrypoint ? JSON.stringify([image.link ?? image.path]) : '[]',
        '--cmd', '[]', ctr
      ], { env: BUILDAH })
      run('buildah', ['commit', '--quiet', ctr, ref], { env: BUILDAH })
    } finally {
      run('buildah', ['rm', ctr], { env: BUILDAH })
    }
    const file = archiveOf(name, image)
    await runAsync('buildah', ['push', '--quiet', ref, `oci-archive:${file}.tmp:${ref}`], { env: BUILDAH })
    renameSync(`${file}.tmp`, file) // a build cut short leaves no archive that looks whole
    built.push(`${name} ${((Date.now() - started) / 1000).toFixed(0)} s`)
  }
  if (built.length) say(`add-on images built: ${built.join(', ')}`)
  return Object.entries(ADDON_IMAGES).map(([name, i]) => archiveOf(name, i))
}

// Named for what is in it too: an image whose entry above changes is built again.
const archiveOf = (name, image) => join(
  archives(), `${name}-${image.tag}-${createHash('sha256').update(JSON.stringify(image)).digest('hex').slice(0, 8)}.tar`
)
