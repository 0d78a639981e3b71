// The development path on the cluster: the charts pushed to the cluster's OCI registry and installed
// from it as a user installs a published chart; then skaffold as a developer runs it, in a copy of the
// tree, with the commands of README.md's lab recipe: `skaffold run` (buildah builds, pushed to the
// registry, the release installed), its helm tests, every route through the Ingress; `skaffold dev`
// and two edits timed from save to the new answer on the forwarded port, one synced, one rebuilt;
// `skaffold delete`, nothing left.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  copyFileSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { goBinDir } from '@suite/kit/testing'
import { root, shared } from '../../charts/test/lib.js'
import { http, kjson, run, runAsync, waitFor } from './lib.js'
import { API_VERSIONS, DEV_REGISTRY, POSTGRES_IMAGE, REDIS_IMAGE, e2e, helmValues } from './context.js'
import { helmTest } from './install.js'
import { routes, served } from './traffic.js'

const DEV_NS = 'suite' // skaffold.yaml's release: suite in the namespace suite
const DEV_HOST = 'dev.suite.test' // the release's Ingress takes every host (ingress.host empty)

/**
 * The umbrella packaged (its dependencies inside) and pushed to oci://<registry>/charts; pulled back,
 * it is the same archive, and renders the same objects as the tree. Sets e2e.chartRef for the reinstall.
 */
export function ociCharts () {
  if (!DEV_REGISTRY) {
    e2e.notes.push('charts from an OCI registry: no E2E_DEV_REGISTRY, so the charts were installed from the tree only')
    return 'skipped: no E2E_DEV_REGISTRY'
  }
  const dir = mkdtempSync(join(tmpdir(), 'suite-oci-'))
  try {
    const packaged = run('helm', ['package', e2e.chartDir, '-d', dir]).stdout.trim().split(' ').pop()
    const version = /-(\d+\.\d+\.\d+[^/]*)\.tgz$/.exec(packaged)[1]
    const repo = `oci://${DEV_REGISTRY}/charts`
    run('helm', ['push', packaged, repo, '--plain-http'])
    mkdirSync(join(dir, 'pulled'))
    run('helm', ['pull', `${repo}/suite`, '--version', version, '--plain-http', '-d', join(dir, 'pulled')])
    const digest = (file) => createHash('sha256').update(readFileSync(file)).digest('hex')
    const pulled = join(dir, 'pulled', packaged.split('/').pop())
    if (digest(pulled) !== digest(packaged)) throw new Error(`${repo}/suite:${version} is not the archive pushed`)
    // With the e2e's values: the defaults' bundled datastores make random passwords at each render.
    const render = (chart, extra = []) => run('helm', [
      'template', 'suite', chart, '-n', 'suite', ...API_VERSIONS, ...helmValues(), ...extra
    ]).stdout
    if (render(`${repo}/suite`, ['--version', version, '--plain-http']) !== render(e2e.chartDir)) {
      throw new Error(`${repo}/suite:${version} renders other objects than the tree`)
    }
    e2e.chartRef = [`${repo}/suite`, '--version', version, '--plain-http']
    return `suite ${version} pushed to ${repo} (sha256 ${digest(packaged).slice(0, 12)}…), ` +
      'pulled back identical, renders as the tree'
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The working tree (tracked and new files, not the ignored ones) copied into a fresh git repository:
 * skaffold tags images by commit.
 */
function treeCopy () {
  const dir = mkdtempSync(join(tmpdir(), 'suite-dev-'))
  const files = run('git', ['-C', root, 'ls-files', '-z', '--cached', '--others', '--exclude-standard']).stdout
    .split('\0').filter(Boolean)
  for (const f of files) {
    try {
      mkdirSync(dirname(join(dir, f)), { recursive: true })
      const from = join(root, f)
      if (lstatSync(from).isSymbolicLink()) symlinkSync(readlinkSync(from), join(dir, f))
      else copyFileSync(from, join(dir, f))
    } catch (err) {
      if (err.code !== 'ENOENT') throw err // a file deleted and not yet committed
    }
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
  const git = (...args) => run('git', ['-C', dir, '-c', 'user.name=e2e', '-c', 'user.email=e2e@suite.test', ...args])
  git('init', '-q')
  git('add', '-A')
  git('commit', '-q', '-m', 'the tree under test')
  return dir
}

// skaffold as a user runs it: helm 3 first on its PATH (scripts/tools.sh), the offline charts' archives.
const skaffoldEnv = () => ({
  PATH: `${join(goBinDir(), 'helm3')}:${goBinDir()}:${process.env.PATH}`,
  SUITE_K8S_DATA: shared,
  POSTGRES_IMAGE,
  REDIS_IMAGE
})

/**
 * The skaffold commands of README.md's lab recipe (its "Dev loop" section), by subcommand: what the
 * README tells a user to type is what runs here, with the registry of this cluster.
 */
export function readmeRecipe (text = readFileSync(join(root, 'README.md'), 'utf8')) {
  const section = text.split(/^## /m).find((s) => s.startsWith('Dev loop\n')) ?? ''
  const block = /On the lab cluster[\s\S]*?```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
  const commands = {}
  const lines = block.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l.startsWith('skaffold '))
  for (const line of lines) {
    const [, command, ...args] = line.split(/\s+/)
    commands[command] = args.map((a) => (a === 'localhost:30500' ? DEV_REGISTRY : a))
  }
  for (const c of ['run', 'dev', 'delete']) {
    if (!commands[c]) throw new Error(`README.md's lab recipe (## Dev loop) has no "skaffold ${c}" line`)
  }
  return commands
}

/**
 * `skaffold dev` in the background: its output kept (the last 200 KB), the forwarded ports read from
 * it.
 */
function skaffoldDev (dir, args) {
  const child = spawn('skaffold', ['dev', ...args], {
    cwd: dir,
    env: { ...process.env, ...skaffoldEnv() },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  const keep = (d) => { out = (out + d).slice(-200_000) }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  const exited = new Promise((resolve) => child.on('exit', resolve))
  return {
    log: () => out,
    // The last forward of the service's (a redeploy forwards again).
    port: (service) => [...out.matchAll(new RegExp(
      `service/suite-${service} in namespace ${DEV_NS}, remote port \\d+ -> http://127\\.0\\.0\\.1:(\\d+)`, 'g'
    ))].pop()?.[1],
    async stop () {
      child.kill('SIGINT') // skaffold dev cleans up (deletes the release) on Ctrl+C
      return Promise.race([exited, sleep(180_000).then(() => {
        child.kill('SIGKILL')
        throw new Error(`skaffold dev did not stop:\n${out.slice(-3000)}`)
      })])
    }
  }
}

/** Seconds from writing `file` (in `dir`) to `check()` being true. */
async function timedEdit (dir, file, edit, what, check, seconds) {
  const path = join(dir, file)
  const started = Date.now()
  writeFileSync(path, edit(readFileSync(path, 'utf8')))
  await waitFor(what, check, { timeoutMs: seconds * 1000, everyMs: 250 })
  return (Date.now() - started) / 1000
}

const docs = async (port) => (await http(`http://127.0.0.1:${port}`, { path: '/docs/json' })).body.info

/**
 * Nothing of the release `suite` left in its namespace (the datastores' Secret and the namespace's own
 * objects aside).
 */
function releaseGone () {
  const kinds = 'pods,jobs,deployments,services,configmaps,secrets,ingresses,horizontalpodautoscalers,' +
    'poddisruptionbudgets,networkpolicies'
  return kjson(['get', kinds, '-n', DEV_NS, '-l', 'app.kubernetes.io/instance=suite']).items
    .map((o) => `${o.kind}/${o.metadata.name}`)
}

// What devRun() leaves for devEdits(): the tree copy skaffold runs in, and the README's recipe.
let dev = null

/** `skaffold run` of README.md's lab recipe in a copy of the tree, and every route through the Ingress. */
export async function devRun () {
  if (!DEV_REGISTRY) {
    e2e.notes.push('skaffold: no E2E_DEV_REGISTRY for this cluster, so the dev loop was not run')
    return 'skipped: no E2E_DEV_REGISTRY'
  }
  const recipe = readmeRecipe()
  const dir = treeCopy()
  try {
    const started = Date.now()
    await runAsync('skaffold', ['run', ...recipe.run], { cwd: dir, env: skaffoldEnv() })
    const runSeconds = (Date.now() - started) / 1000
    const tests = await helmTest({ release: 'suite', ns: DEV_NS, env: skaffoldEnv() })
    await served(DEV_HOST)
    const checks = await routes(DEV_HOST)
    dev = { dir, recipe }
    return `skaffold run ${recipe.run.join(' ')}: ${runSeconds.toFixed(0)} s (buildah, pushed, installed); ` +
      `helm test ${tests}; ${checks} route checks through the Ingress`
  } catch (err) {
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
}

/**
 * After devRun(): `skaffold dev`, a synced and a rebuilt edit timed from save to answer, then
 * `skaffold delete`, nothing left. The edits wait for `alone` (what runs beside the start is over).
 */
export async function devEdits ({ alone } = {}) {
  if (!dev) return 'skipped: no skaffold run'
  const { dir, recipe } = dev
  try {
    const started = Date.now()
    const session = skaffoldDev(dir, recipe.dev)
    let synced, rebuilt, devSeconds
    try {
      const port = await waitFor(
        'skaffold dev: deployed, product forwarded, watching',
        () => /Watching for changes/.test(session.log()) && session.port('product'),
        { timeoutMs: 600_000, everyMs: 1000 }
      )
      devSeconds = (Date.now() - started) / 1000
      await alone
      const before = await docs(port)
      const token = `dev loop ${Date.now()}`
      synced = await timedEdit(
        dir,
        'services/product/src/service.js',
        (t) => t.replace(/description: '/, `description: '${token}: `),
        'the edited description on the forwarded port',
        async () => (await docs(port).catch(() => ({}))).description?.startsWith(token),
        60
      )
      const version = `${before.version}-dev.1`
      rebuilt = await timedEdit(
        dir,
        'services/product/package.json',
        (t) => t.replace(/"version": "[^"]+"/, `"version": "${version}"`),
        'the new package version on the forwarded port (a rebuilt image)',
        async () => (await docs(session.port('product')).catch(() => ({}))).version === version,
        300
      )
    } catch (err) {
      console.error(session.log().slice(-5000))
      throw err
    } finally {
      await session.stop()
    }
    await runAsync('skaffold', ['delete', ...recipe.delete], { cwd: dir, env: skaffoldEnv() })
    const left = await waitFor(
      'nothing of the release left after skaffold delete',
      () => releaseGone().length === 0 && [],
      { timeoutMs: 180_000, everyMs: 3000 }
    )
    if (synced > 5) {
      e2e.problems.push(`skaffold dev: a synced edit took ${synced.toFixed(1)} s to answer (target 5 s)`)
    }
    if (rebuilt > 90) {
      e2e.problems.push(`skaffold dev: a rebuild took ${rebuilt.toFixed(0)} s to answer (target 90 s)`)
    }
    return `skaffold dev: up in ${devSeconds.toFixed(0)} s, ` +
      `an edited .js answered on the forwarded port ${synced.toFixed(1)} s after the save (synced), ` +
      `a package.json change ${rebuilt.toFixed(0)} s after (rebuilt, redeployed); ` +
      `skaffold delete: ${left.length} objects left`
  } finally {
    rmSync(dir, { recursive: true, force: true })
    dev = null
  }
}
