// Releases as a platform team consumes them. The previous release (built from its git tag by this
// tree's release command) and this tree's are pushed to the cluster's registry and signed with a key
// made for the run; each is verified before it is installed, and a tampered one is refused. The
// install stage installs the previous release as soon as it is verified, while this one is made;
// upgradePath upgrades it to this one under load, rolls back and upgrades again, with zero failed
// requests and every acknowledged write kept (onto a release without the start wait, the 503s of its
// starting pods allowed: startingAnswers).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { root } from '../../charts/test/lib.js'
import { previousRelease } from '../../scripts/release/previous.js'
import { releaseSteps } from '../../scripts/release/steps.js'
import { verifyRelease } from '../../scripts/release/verify.js'
import { artifacts } from '../../scripts/release/artifacts.js'
import { apiItems, http, kjson, run, runAsync, waitFor } from './lib.js'
import { DEV_REGISTRY, LOAD_HOSTS, NS, RELEASE, e2e, env, helmValues } from './context.js'
import { OWN_ANSWERS, phasesUnderLoad, rolloutStatus, underLoad } from './disruptions.js'
import { served } from './traffic.js'

const REGISTRY = `${DEV_REGISTRY}/suite`

/**
 * Both releases made, pushed and signed; each verified; a moved tag refused. Sets e2e.releases.
 * `previousReady` is called once the previous release is verified (e2e.releases.previous set): the
 * install takes it from there while this tree's release is made.
 */
export async function releases ({ previousReady = () => {} } = {}) {
  if (!DEV_REGISTRY) {
    e2e.notes.push('releases: no E2E_DEV_REGISTRY, so no release was pushed, verified or upgraded from')
    return 'skipped: no E2E_DEV_REGISTRY'
  }
  const dir = mkdtempSync(join(tmpdir(), 'suite-releases-'))
  const { version, previous } = previousRelease()
  const worktree = join(dir, `v${previous.version}`)
  try {
    // A key made for this run, without a password (cosign reads COSIGN_PASSWORD rather than ask).
    process.env.COSIGN_PASSWORD = ''
    run('cosign', ['generate-key-pair', '--output-key-prefix', join(dir, 'cosign')])
    run('git', ['-C', root, 'worktree', 'add', '--detach', worktree, previous.commit])
    // The stage starts beside the add-ons' install, the registry's among them.
    await waitFor(`the registry at ${DEV_REGISTRY}`, async () => (await http(`http://${DEV_REGISTRY}`, { path: '/v2/' })
      .catch(() => ({}))).status === 200, { timeoutMs: 600_000, everyMs: 1000 })
    const verify = (v) => verifyRelease({
      version: v,
      registry: REGISTRY,
      key: join(dir, 'cosign.pub'),
      out: mkdtempSync(join(tmpdir(), 'suite-verified-')),
      log: console.error
    })
    const release = async (v, tree) => {
      const started = Date.now()
      await releaseSteps({
        version: v,
        registry: REGISTRY,
        key: join(dir, 'cosign.key'),
        tree,
        out: join(dir, `release-${v}`),
        nodeImage: env.E2E_NODE_IMAGE
      }).run()
      const made = `${v} released in ${((Date.now() - started) / 1000).toFixed(0)} s`
      return { made, verified: verify(v) }
    }
    const before = await release(previous.version, worktree)
    e2e.releases = { previous: { ...before.verified, version: previous.version, commit: previous.commit } }
    previousReady()
    const now = await release(version)
    e2e.releases.current = { ...now.verified, version }
    return `${before.made}, ${now.made}; both verified (charts, images, SBOM attestations); ` +
      `${tampered(version, verify, join(dir, 'cosign.pub'))}`
  } finally {
    run('git', ['-C', root, 'worktree', 'remove', '--force', worktree], { ok: true })
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * An image of the release replaced under its tag (a label added): verification refuses the release,
 * and the image itself is unsigned.
 */
function tampered (version, verify, pub) {
  const a = artifacts(version, REGISTRY)
  const signed = a.resolve(a.image('flows'))
  run('crane', ['mutate', '--insecure', a.image('flows'), '--label', 'org.suite.tampered=true', '-t', a.image('flows')])
  const moved = a.resolve(a.image('flows'))
  try {
    let refused
    try { verify(version) } catch (err) { refused = err.message }
    if (!/tag was moved/.test(refused ?? '')) {
      throw new Error(`a release whose flows tag names another image was not refused: ${refused ?? 'verified'}`)
    }
    const unsigned = run('cosign', [
      'verify', '--key', pub, '--insecure-ignore-tlog', '--allow-http-registry', `${a.imageRepo('flows')}@${moved}`
    ], { ok: true })
    if (unsigned.code === 0) throw new Error(`the tampered image ${moved} verified`)
    return `tampered (flows:${version} replaced): refused ("${refused}"); the replacing image has no signature`
  } finally {
    run('crane', ['tag', '--insecure', `${a.imageRepo('flows')}@${signed}`, version])
  }
}

/** The values of an install from a release: its chart pins the images, so no registry or tag is set. */
export const releaseValues = (extra = []) => helmValues(extra, { released: true })

/** The versions the Ready server pods run, polled while `action` runs: whether old and new served side by side. */
async function versionsDuring (action) {
  let both = 0
  let polling = true
  const poll = (async () => {
    while (polling) {
      const pods = await apiItems(`/api/v1/namespaces/${NS}/pods`, 'app.kubernetes.io/component=server')
      const ready = pods.filter((p) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
      if (new Set(ready.map((p) => p.metadata.labels['app.kubernetes.io/version'])).size > 1) both++
      await new Promise((resolve) => setTimeout(resolve, 1000))
    }
  })()
  try {
    return { result: await action(), both }
  } finally {
    polling = false
    await poll
  }
}

// A release before the kit's start wait (START_WAIT_MS) lets a new worker take requests before PostgreSQL
// and Redis answer it. Where the network plugin admits a new pod's connections seconds late (kube-router
// on the lab), those pods answer their first requests with the service's own 503s and 504s. A rollback onto
// such a release allows those, up to 1 request in 10; every acknowledged write must still be kept.
const waitsAtStart = (commit) =>
  run('git', ['-C', root, 'grep', '-q', 'START_WAIT_MS', commit, '--', 'services/kit/src'], { ok: true }).code === 0
const startingAnswers = (version) => ({
  test: (kind) => OWN_ANSWERS.test(kind),
  why: `${version} has no start wait: its new pods serve before their connections are admitted`,
  share: 0.1
})

/** The previous release upgraded to this one, rolled back, upgraded again: under steady load, each step. */
export async function upgradePath () {
  if (!e2e.releases) return 'skipped: no releases'
  const { previous, current } = e2e.releases
  for (const host of LOAD_HOSTS) await served(host) // the proxy routes a fresh install a few seconds after --wait
  return phasesUnderLoad('over the upgrade path', async (ids) => {
    const step = (name, to, command, excused) => underLoad(name, ids, async () => {
      const { both } = await versionsDuring(async () => {
        await runAsync('helm', command)
        await rolloutStatus()
      })
      const running = new Set(kjson(['get', 'pods', '-n', NS, '-l', 'app.kubernetes.io/component=server']).items
        .filter((p) => !p.metadata.deletionTimestamp)
        .map((p) => p.metadata.labels['app.kubernetes.io/version']))
      if (running.size !== 1 || !running.has(to)) {
        throw new Error(`${name}: the pods run ${[...running].join(', ')}, not ${to}`)
      }
      return `${to} running; old and new Ready side by side in ${both} polls`
    }, { excused })
    const upgrade = (chart) => ['upgrade', RELEASE, chart, '-n', NS, '--wait', '--timeout', '10m', ...releaseValues()]
    await step(`upgrade ${previous.version} → ${current.version}`, current.version, upgrade(current.chart))
    await step(`rollback to ${previous.version}`, previous.version, [
      'rollback', RELEASE, '-n', NS, '--wait', '--timeout', '10m'
    ], waitsAtStart(previous.commit) ? undefined : startingAnswers(previous.version))
    await step(`upgrade again to ${current.version}`, current.version, upgrade(current.chart))
  })
}
