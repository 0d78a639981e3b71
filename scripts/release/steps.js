// The steps of a release (scripts/release.js), in order, each with the commands it runs: printed as
// they run, or only printed (--dry-run). Later steps use what earlier ones found (the digests the
// registry gave); a dry run shows those as <digest of …>.
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseDocument } from 'yaml'
import { UserError } from '@suite/kit/args'
import { NAMES } from '../../services/list.js'
import { fillDependencies, root } from '../../charts/test/lib.js'
import { artifacts, cosignRegistryArgs } from './artifacts.js'

const BUILDAH_ENV = {
  STORAGE_DRIVER: process.env.STORAGE_DRIVER || 'vfs',
  BUILDAH_ISOLATION: process.env.BUILDAH_ISOLATION || 'chroot'
}

/** The release of `version` from `tree` (default: this checkout, bumped) to `registry`, signed with `key`. */
export function releaseSteps ({ version, registry, key, tree, out, nodeImage, dryRun = false }) {
  const dir = resolve(tree ?? root)
  const a = artifacts(version, registry)
  const outDir = out
    ? resolve(out)
    : dryRun ? join(tmpdir(), `suite-release-${version}`) : mkdtempSync(join(tmpdir(), `suite-release-${version}-`))
  const services = NAMES.filter((s) => existsSync(join(dir, 'services', s, 'package.json')))
  const digests = {} // image or chart name → sha256:…
  const digestOf = (name) => digests[name] ?? `<digest of ${name}>`
  const signing = key ? ['--key', key] : [] // keyless without a key: cosign asks the OIDC issuer
  // With a key, the signatures are checked against it alone: no transparency log (a private
  // registry, an air gap); keyless signing needs Rekor, cosign's default. (cosign 3 calls the flag
  // deprecated in favour of a signing config naming no log; it still does what it says.)
  const tlog = key ? ['--use-signing-config=false', '--tlog-upload=false'] : []
  const steps = []
  const step = (title, fn) => steps.push({ title, fn })

  const show = (cmd, args, env) =>
    console.log(`    $ ${[...Object.entries(env ?? {}).map(([k, v]) => `${k}=${v}`), cmd, ...args].join(' ')}`)
  const notFound = 'not found on PATH (scripts/tools.sh cluster builds syft, cosign and crane; ' +
    'buildah and helm are needed too)'
  const cannotRun = (cmd, err) => new UserError(`${cmd}: ${err.code === 'ENOENT' ? notFound : err.message}`)
  const failed = (cmd, args, code, stderr) => {
    const tail = stderr ? `: ${stderr.trim().split('\n').slice(-3).join(' ')}` : ''
    return new UserError(`${cmd} ${args[0]} exited ${code}${tail}`)
  }

  /** Prints a command and, unless dry, runs it; returns its stdout. */
  const exec = (cmd, args, { env, quiet = false } = {}) => {
    show(cmd, args, env)
    if (dryRun) return ''
    const r = spawnSync(cmd, args, {
      cwd: dir,
      encoding: 'utf8',
      maxBuffer: 256 << 20,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', quiet ? 'pipe' : 'inherit']
    })
    if (r.error) throw cannotRun(cmd, r.error)
    if (r.status !== 0) throw failed(cmd, args, r.status, quiet && r.stderr)
    return r.stdout
  }

  step('version: one for the charts, images and packages', () => {
    const have = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version
    if (tree) {
      if (have !== version) {
        throw new UserError(`${dir} is at ${have}, not ${version}: release another checkout as it is`)
      }
      console.log(`    ${dir} is at ${version}`)
      return
    }
    if (have === version) {
      console.log(`    package.json is at ${version} already`)
    } else {
      console.log(`    package.json: ${have} → ${version}`)
      if (!dryRun) {
        writeFileSync(join(root, 'package.json'), readFileSync(join(root, 'package.json'), 'utf8')
          .replace(/^ {2}"version": "[^"]*"/m, `  "version": "${version}"`))
      }
      exec('node', ['scripts/generate.js'])
    }
    exec('node', ['scripts/generate.js', '--check'])
  })

  /**
   * exec() of several commands at once, [cmd, args, options] each (a scan waits on the registry at
   * times: the other uses the core).
   */
  const execAll = (commands) => Promise.all(commands.map(([cmd, args, { env } = {}]) => {
    show(cmd, args, env)
    if (dryRun) return ''
    return new Promise((resolve, reject) => {
      const child = spawn(cmd, args, { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      let err = ''
      child.stdout.on('data', (d) => { out += d })
      child.stderr.on('data', (d) => { err += d })
      child.on('error', (e) => reject(cannotRun(cmd, e)))
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(failed(cmd, args, code, err))))
    })
  }))

  step(`images: ${services.length} from services/Dockerfile`, () => {
    for (const s of services) {
      exec('buildah', [
        'bud', '--quiet', '--layers', '--build-arg', `SERVICE=${s}`,
        ...(nodeImage ? ['--build-arg', `NODE_IMAGE=${nodeImage}`] : []),
        '-f', 'services/Dockerfile', '-t', a.image(s), '.'
      ], { env: BUILDAH_ENV, quiet: true })
    }
  })

  // One at a time: the images share their base layers, and a registry may take two uploads of one
  // blob badly (crane's registry cut one off).
  step(`push the images to ${registry}`, () => {
    if (!dryRun) mkdirSync(outDir, { recursive: true })
    for (const s of services) {
      const file = join(outDir, `digest-${s}`)
      exec('buildah', [
        'push', '--quiet', `--tls-verify=${!a.plainHttp}`, '--digestfile', file, a.image(s), `docker://${a.image(s)}`
      ], { env: BUILDAH_ENV, quiet: true })
      if (!dryRun) digests[s] = readFileSync(file, 'utf8').trim()
      console.log(`    ${a.image(s)}@${digestOf(s)}`)
    }
  })

  step('SBOMs: CycloneDX, one per image pushed ' +
    '(syft: the base image\'s packages and the npm dependencies)', async () => {
    const file = (s) => join(outDir, `sbom-${s}.cdx.json`)
    await execAll(services.map((s) => [
      'syft',
      ['scan', `registry:${a.imageRepo(s)}@${digestOf(s)}`, '-o', `cyclonedx-json=${file(s)}`, '-q'],
      { env: a.plainHttp ? { SYFT_REGISTRY_INSECURE_USE_HTTP: 'true' } : {} }
    ]))
    const components = (s) => JSON.parse(readFileSync(file(s), 'utf8')).components?.length ?? 0
    if (!dryRun) for (const s of services) console.log(`    ${file(s)}: ${components(s)} components`)
  })

  step('charts: packaged with the images\' registry and digests pinned', () => {
    const src = join(outDir, 'src')
    console.log(`    a copy of charts/ in ${src}: suite/values.yaml global.suite.imageRegistry=${registry}, ` +
      '<service>.image.digest=<its digest>; ' +
      "suite/Chart.yaml's artifacthub.io/images by digest; suite/charts/ its dependencies")
    if (!dryRun) {
      rmSync(src, { recursive: true, force: true })
      // dereference: loadtest/scripts links to loadtests/k6; the copy holds the files themselves.
      cpSync(join(dir, 'charts'), src, {
        recursive: true,
        dereference: true,
        filter: (p) => !p.endsWith('/charts/suite/charts')
      })
      const values = parseDocument(readFileSync(join(src, 'suite', 'values.yaml'), 'utf8'))
      values.setIn(['global', 'suite', 'imageRegistry'], registry)
      for (const s of services) values.setIn([s, 'image', 'digest'], digests[s])
      writeFileSync(join(src, 'suite', 'values.yaml'), values.toString({ lineWidth: 0 }))
      const chartYaml = join(src, 'suite', 'Chart.yaml')
      writeFileSync(chartYaml, readFileSync(chartYaml, 'utf8')
        .replace(/image: suite-(\S+):(\S+)/g, (m, s, v) => `image: ${a.imageRepo(s)}:${v}@${digests[s]}`))
      fillDependencies(join(src, 'suite'), src)
    }
    for (const c of ['service', 'loadtest', 'suite']) {
      exec('helm', ['package', join(src, c), '-d', outDir], { quiet: true })
    }
  })

  step(`push the charts to ${a.charts}`, () => {
    for (const c of ['service', 'loadtest', 'suite']) {
      const said = exec('helm', [
        'push', join(outDir, `${c}-${version}.tgz`), a.charts, ...(a.plainHttp ? ['--plain-http'] : [])
      ], { quiet: true })
      // helm push prints the digest on stderr (helm 4) or stdout (helm 3): both are in `said` below.
      if (!dryRun) digests[`chart:${c}`] = /Digest: (sha256:[0-9a-f]{64})/.exec(said)?.[1] ?? a.resolve(a.chart(c))
      console.log(`    ${a.chart(c)}@${digestOf(`chart:${c}`)}`)
    }
  })

  step(`sign with cosign (${key ? `key ${key}` : 'keyless'}): images, their SBOMs as attestations, charts`, () => {
    const cosign = (args) =>
      exec('cosign', [...args, ...signing, ...tlog, ...cosignRegistryArgs(a), '--yes'], { quiet: true })
    for (const s of services) {
      cosign(['sign', `${a.imageRepo(s)}@${digestOf(s)}`])
      cosign([
        'attest', '--type', 'cyclonedx', '--predicate', join(outDir, `sbom-${s}.cdx.json`),
        `${a.imageRepo(s)}@${digestOf(s)}`
      ])
    }
    for (const c of ['service', 'loadtest', 'suite']) cosign(['sign', `${a.chartRepo(c)}@${digestOf(`chart:${c}`)}`])
  })

  step('the release, written down', () => {
    const release = {
      version,
      images: Object.fromEntries(services.map((s) => [s, `${a.imageRepo(s)}@${digestOf(s)}`])),
      charts: Object.fromEntries(['service', 'loadtest', 'suite'].map((c) =>
        [c, `${a.chartRepo(c)}@${digestOf(`chart:${c}`)}`])),
      install: `helm install suite oci://${a.chartRepo('suite')} --version ${version}`
    }
    if (!dryRun) writeFileSync(join(outDir, 'release.json'), JSON.stringify(release, null, 2) + '\n')
    console.log(`    ${join(outDir, 'release.json')}\n${JSON.stringify(release, null, 2).replace(/^/gm, '    ')}`)
    if (!tree) {
      console.log(`    then: git commit -am "Release ${version}" && git tag -s v${version} && git push --follow-tags`)
    }
  })

  return {
    steps,
    outDir,
    release: () => JSON.parse(readFileSync(join(outDir, 'release.json'), 'utf8')),
    async run () {
      const dry = dryRun ? ' (dry run: nothing is changed, built or pushed)' : ''
      console.log(`release ${version}${dry}: ${dir} → ${registry}`)
      for (const [i, s] of steps.entries()) {
        const started = Date.now()
        console.log(`\n[${i + 1}/${steps.length}] ${s.title}`)
        await s.fn()
        if (!dryRun) console.log(`    (${((Date.now() - started) / 1000).toFixed(1)} s)`)
      }
    }
  }
}
