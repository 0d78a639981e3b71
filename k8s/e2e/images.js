// The images, built from the real services/Dockerfile (buildah or docker) and loaded into the nodes.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { root } from '../../charts/test/lib.js'
import { run, runAsync } from './lib.js'
import { BUILD, LOAD, SERVICES, TAG, TAG_B, env, image } from './context.js'

/**
 * Builds every service's image from the real Dockerfile, tagged TAG (and TAG_B, for the image upgrade
 * without a registry), and loads them.
 */
export async function images () {
  if (BUILD === 'none') return 'not built (E2E_BUILD=none)'
  const dir = mkdtempSync(join(tmpdir(), 'suite-e2e-images-'))
  try {
    const archives = []
    // a service's archives are written while the next one builds (a push is mostly one core compressing)
    const pushes = []
    for (const s of SERVICES) {
      const args = [
        '--build-arg', `SERVICE=${s}`,
        ...(env.E2E_NODE_IMAGE ? ['--build-arg', `NODE_IMAGE=${env.E2E_NODE_IMAGE}`] : []),
        '-f', 'services/Dockerfile', '-t', image(s), root
      ]
      const started = Date.now()
      if (BUILD === 'buildah') {
        await runAsync('buildah', ['bud', '--quiet', '--layers', ...args], {
          env: { STORAGE_DRIVER: 'vfs', BUILDAH_ISOLATION: 'chroot' }
        })
        if (TAG_B) run('buildah', ['tag', image(s), image(s, TAG_B)], { env: { STORAGE_DRIVER: 'vfs' } })
        for (const tag of [TAG, TAG_B].filter(Boolean)) {
          const file = join(dir, `${s}-${tag}.tar`)
          const push = runAsync('buildah', [
            'push', '--quiet', image(s, tag), `oci-archive:${file}:${image(s, tag)}`
          ], { env: { STORAGE_DRIVER: 'vfs' } })
          push.catch(() => {}) // a failure is thrown by Promise.all below, not as an unhandled rejection meanwhile
          pushes.push(push)
          archives.push(file)
        }
      } else {
        await runAsync('docker', ['build', '-q', ...args])
        if (TAG_B) run('docker', ['tag', image(s), image(s, TAG_B)])
        const file = join(dir, `${s}.tar`)
        run('docker', ['save', '-o', file, image(s), ...(TAG_B ? [image(s, TAG_B)] : [])])
        archives.push(file)
      }
      console.error(`built ${image(s)} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    }
    await Promise.all(pushes)
    if (BUILD === 'buildah') checkImageFiles()
    if (LOAD) {
      const [cmd, ...args] = LOAD.split(' ').filter(Boolean)
      await runAsync(cmd, [...args, ...archives])
    }
    return `${SERVICES.length} images ${TAG}${TAG_B ? ` (and ${TAG_B})` : ''}, ` +
      `${LOAD ? 'loaded' : 'not loaded (no E2E_IMAGE_LOAD)'}`
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The image holds the service's runtime files and nothing else of the repository (.dockerignore as
 * buildah reads it).
 */
function checkImageFiles () {
  const files = run('sh', [
    '-c',
    `ctr=$(buildah from -q ${image('product')}) && ` +
    `buildah run "$ctr" -- sh -c 'cd /app && find services -type f | sort'; buildah rm "$ctr" >/dev/null`
  ], { env: { STORAGE_DRIVER: 'vfs', BUILDAH_ISOLATION: 'chroot' } }).stdout.trim().split('\n')
  const tracked = run('git', ['-C', root, 'ls-files', 'services/kit', 'services/product', 'services/list.js'])
    .stdout.trim().split('\n')
  // services/list.js: a service's data commands are made from its entry there.
  const isRuntime = (f) =>
    f === 'services/list.js' || /^services\/[^/]+\/(package\.json|(src|migrations|etl)\/.+)$/.test(f)
  const runtime = tracked.filter(isRuntime).sort()
  const extra = files.filter((f) => !runtime.includes(f))
  const missing = runtime.filter((f) => !files.includes(f))
  if (extra.length || missing.length) {
    throw new Error("the image's services/ is not the runtime files: " +
      `extra ${extra.join(', ') || '-'}; missing ${missing.join(', ') || '-'}`)
  }
  console.error(`image ${image('product')}: /app/services holds exactly the ${runtime.length} runtime files`)
}
