// Migrations follow expand/contract: a release's migrations never break the release before it, whose
// pods still serve during a rolling upgrade and again after `helm rollback`. The previous release's
// services (its git tag, scripts/release/previous.js) run here on databases this tree migrated, and
// answer the cluster e2e's route check: reads and writes of every service's tables. A contracting
// change made in one step (a column the previous release writes, dropped by the next) fails it.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs'
import { createServer, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { startService } from '@suite/kit/testing'
import { adminUrl, redisUrl } from '@suite/kit/testing/env'
import { NAMES, serviceOf } from '../../services/list.js'
import { prepareDatabase } from '../../loadtests/lib/stack.js'
import { previousRelease } from '../release/previous.js'
import { routes } from '../../k8s/e2e/traffic.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const { version, previous } = previousRelease()
let tree

// The previous release's services and kit, with this checkout's installed dependencies except the
// workspaces, which are its own.
before(() => {
  tree = mkdtempSync(join(tmpdir(), `suite-v${previous.version}-`))
  execFileSync('sh', ['-c', `git -C "${root}" archive ${previous.commit} services package.json | tar -x -C "${tree}"`])
  mkdirSync(join(tree, 'node_modules', '@suite'), { recursive: true })
  for (const entry of readdirSync(join(root, 'node_modules')).filter((e) => e !== '@suite' && e !== '.bin')) {
    symlinkSync(join(root, 'node_modules', entry), join(tree, 'node_modules', entry))
  }
  for (const w of readdirSync(join(tree, 'services')).filter((w) => !w.includes('.') && w !== 'Dockerfile')) {
    symlinkSync(join(tree, 'services', w), join(tree, 'node_modules', '@suite', w))
  }
})
after(() => rmSync(tree, { recursive: true, force: true }))

/**
 * Each service's database with this tree's migrations and a small generated data set (the load
 * tests' own, loadtests/lib/stack.js), then `change[service]` run on it. Returns service → URL.
 */
async function thisTreesSchema (change = {}) {
  const urls = {}
  for (const name of NAMES) {
    urls[name] = (await prepareDatabase(name, { adminUrl, rows: 60 })).url
    if (!change[name]) continue
    const client = new pg.Client({ connectionString: urls[name] })
    await client.connect()
    await client.query(change[name]).finally(() => client.end())
  }
  return urls
}

/**
 * The previous release's four services on `urls`, behind a router of the one host's paths; the e2e's
 * route check through it.
 */
async function previousReleaseRoutes (urls, redisDb) {
  const services = await Promise.all(NAMES.map((name) => startService({
    entry: join(tree, 'services', name, 'src', 'cli.js'),
    args: ['serve'],
    env: { DATABASE_URL: urls[name], REDIS_URL: `${redisUrl}/${redisDb}`, WORKERS: '1' }
  })))
  const port = Object.fromEntries(NAMES.map((name, i) => [name, services[i].port]))
  const router = createServer((req, res) => {
    const to = port[serviceOf(req.url)]
    if (!to) {
      return res.writeHead(404, { 'content-type': 'application/json' }).end('{"statusCode":404,"error":"Not Found"}')
    }
    req.pipe(request({ host: '127.0.0.1', port: to, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers)
      r.pipe(res)
    }))
  })
  await new Promise((resolve) => router.listen(0, '127.0.0.1', resolve))
  try {
    return await routes('suite.test', `http://127.0.0.1:${router.address().port}`)
  } finally {
    router.close()
    await Promise.all(services.map((s) => s.stop()))
  }
}

test(`the previous release (${previous.version}) answers every route ` +
  `on this release's (${version}) schema`, { timeout: 120_000 }, async (t) => {
  const checks = await previousReleaseRoutes(await thisTreesSchema(), 10)
  assert.ok(checks >= 15, `${checks} checks`)
  t.diagnostic(`${previous.version} at ${previous.commit.slice(0, 12)}: ` +
    `${checks} route checks passed on ${version}'s schema`)
})

test('a contracting change made in one step (a column the previous release writes, dropped) ' +
  'fails it', { timeout: 120_000 }, async () => {
  const urls = await thisTreesSchema({ profile: 'ALTER TABLE restaurants DROP COLUMN phone' })
  await assert.rejects(previousReleaseRoutes(urls, 15), /POST \/restaurants: 500/)
})
