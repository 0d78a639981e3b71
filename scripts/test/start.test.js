// The quick start works: `npm start` with no database or cache server serves every service's sample,
// on 127.0.0.1 only; it never says "ready" for a port someone else answers on; and whatever stops it
// (SIGTERM to npm, SIGKILL to the launcher) stops every service it started.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createServer as createHttpServer } from 'node:http'
import { once } from 'node:events'
import { readFileSync, existsSync, mkdirSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { get, processesWithEnv, freePortBlock } from '@suite/kit/testing'
import { createDatabase } from '@suite/kit/testing/env'
import { SERVICES, PORT_OFFSETS } from '../../services/list.js'
import { launcherCommand } from '../start/command.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

// The addresses (hex, as /proc/net/tcp writes them) listening on `port`: 0100007F is 127.0.0.1.
function listeningOn (port) {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  const found = []
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/)
      if (state === '0A' && local?.endsWith(`:${hexPort}`)) found.push(local.split(':')[0])
    }
  }
  return [...new Set(found)]
}

// npm start moves every service of the list by PORT: a PORT whose ports are all free.
const freePorts = () => freePortBlock(PORT_OFFSETS)

// `npm start` with no database or cache server (the embedded default) on PORT=port, or with `extra`
// settings; its output gathers in `launched.out`. `command`: the launcher itself, or npm.
function launch (port, sampleSize, extra = {}, command = launcherCommand()) {
  const { DATABASE_URL, DATABASE_PASSWORD, REDIS_URL, HOST, ...env } = process.env
  const child = spawn(command[0], command.slice(1), {
    cwd: root,
    env: { ...env, PORT: String(port), SAMPLE_SIZE: String(sampleSize), LOG_LEVEL: 'warn', ...extra },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const launched = { child, out: '' }
  child.stdout.on('data', (d) => { launched.out += d })
  child.stderr.on('data', (d) => { launched.out += d })
  launched.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  return launched
}

// A busy machine (PGlite's start, four samples, four services) can take minutes: bounds, not timings.
const SLOW = { timeout: 300_000 }

test('npm start runs the suite on embedded PostgreSQL and stops cleanly', SLOW, async () => {
  const port = await freePorts()
  // The folder of a launcher that was killed (a pid that is gone): the next start removes it.
  const gone = spawnSync(process.execPath, ['-e', '']).pid
  const leftBehind = `${root}.data/pglite-run-${gone}`
  mkdirSync(`${leftBehind}/base`, { recursive: true })
  const launched = launch(port, 300)
  const { child, exited } = launched
  const runDir = `${root}.data/pglite-run-${child.pid}`
  try {
    for (let i = 0; i < 2400 && !launched.out.includes('product ready'); i++) {
      assert.equal(child.exitCode, null, launched.out)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.match(launched.out, new RegExp(`product ready: http://localhost:${port}/products`))
    for (const offset of PORT_OFFSETS) {
      assert.deepEqual(listeningOn(port + offset), ['0100007F'], `port ${port + offset}: 127.0.0.1 only`)
    }
    for (const [i, s] of SERVICES.entries()) {
      for (const path of s.samples) {
        const answer = await get(`http://127.0.0.1:${port + PORT_OFFSETS[i]}`, path)
        assert.equal(answer.status, 200,
          `${s.name} ${path}: ${JSON.stringify(answer.body)}\n${launched.out.slice(-2000)}`)
      }
    }
    const embedded = Number(/embedded PostgreSQL .*@127\.0\.0\.1:(\d+)\//.exec(launched.out)[1])
    assert.deepEqual(listeningOn(embedded), ['0100007F'], 'the embedded PostgreSQL: 127.0.0.1 only')
    assert.doesNotMatch(launched.out, /postgres:[^*@\s]+@/, 'its password is not printed')
    const base = `http://127.0.0.1:${port}`
    const list = await get(base, '/products?count=100')
    assert.equal(list.status, 200)
    assert.ok(list.body.length > 50)
    const id = list.body[0].id
    for (const path of [`/products/${id}`, `/products/${id}/styles`, `/products/${id}/related`]) {
      assert.equal((await get(base, path)).status, 200, path)
    }
    assert.equal((await get(base, '/readyz')).body.cache, 'memory')
    const profile = `http://127.0.0.1:${port + 1}`
    assert.equal((await get(profile, '/restaurants/1')).body.id, 1)
    assert.equal((await get(profile, '/restaurants/1/profile')).body.length, 1)
    const menu = `http://127.0.0.1:${port + 2}`
    const m = await get(menu, '/menu/2')
    assert.equal(m.status, 200)
    assert.equal(m.body.id, 2)
    assert.deepEqual((await get(menu, '/restaurants/2/menu')).body, m.body)
    // flows, on the next ports: a write, then the total
    const flows = `http://127.0.0.1:${port + 3}`
    const post = await fetch(`${flows}/flows`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ src_app: 'a', dest_app: 'b', vpc_id: 'v', bytes_tx: 5, bytes_rx: 7, hour: 1 }])
    })
    assert.equal(post.status, 200)
    assert.deepEqual((await get(flows, '/flows?hour=1')).body,
      [{ src_app: 'a', dest_app: 'b', vpc_id: 'v', bytes_tx: '5', bytes_rx: '7', hour: 1 }])
    assert.ok(existsSync(`${runDir}/PG_VERSION`), 'the embedded cluster\'s files are in the run\'s folder')
    assert.ok(!existsSync(leftBehind), 'a killed launcher\'s folder is removed')
  } finally {
    child.kill('SIGTERM')
  }
  assert.deepEqual(await exited, { code: 0, signal: null }, launched.out)
  assert.ok(!existsSync(runDir), 'the run\'s folder is removed at stop')
})

test('npm start stops everything and exits 1 when a service cannot start', async () => {
  const port = await freePorts()
  // A setting only the services check: each of them exits 1 at start.
  const launched = launch(port, 50, { MAX_EVENT_LOOP_UTILIZATION: '2' })
  const { code } = await launched.exited
  assert.equal(code, 1, launched.out)
  assert.match(launched.out,
    /(product|profile|menu|flows) cannot start: config: MAX_EVENT_LOOP_UTILIZATION must be <= 1[^\n]*; stopping/)
  assert.doesNotMatch(launched.out, / ready: /)
  await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'product was stopped too')
})

test('npm start on ports another server answers on: exit 1 naming the port, never "ready"', async () => {
  const port = await freePorts()
  // Another suite, say: it answers every readiness check with 200.
  const others = await Promise.all(PORT_OFFSETS.map(async (i) => {
    const server = createHttpServer((req, res) => res.end('{"status":"ready"}')).listen(port + i, '127.0.0.1')
    await once(server, 'listening')
    return server
  }))
  try {
    const launched = launch(port, 50)
    const { code } = await launched.exited
    assert.equal(code, 1, launched.out)
    assert.match(launched.out, new RegExp(`cannot start product on 127\\.0\\.0\\.1:${port}: the port is in use`))
    assert.doesNotMatch(launched.out, / ready: /)
  } finally {
    for (const server of others) server.close()
  }
})

/** Waits until no process carries the marker; returns those still there after `ms`. */
async function survivorsAfter (marker, ms) {
  const until = Date.now() + ms
  for (;;) {
    const left = processesWithEnv('SUITE_TEST_MARKER', marker)
    if (!left.length || Date.now() > until) return left
    await sleep(200)
  }
}

for (const [how, command, kill] of [
  ['SIGTERM to npm', ['npm', 'start'], (launched) => launched.child.kill('SIGTERM')],
  ['SIGKILL to the launcher', undefined, (launched) => launched.child.kill('SIGKILL')]
]) {
  test(`${how}: every service stops, none is left serving`, SLOW, async () => {
    const port = await freePorts()
    const marker = randomBytes(8).toString('hex')
    const launched = launch(port, 50,
      { DATABASE_URL: await createDatabase('start'), SUITE_TEST_MARKER: marker }, command)
    try {
      for (let i = 0; i < 2400 && !launched.out.includes('Ctrl-C stops'); i++) {
        assert.equal(launched.child.exitCode, null, launched.out)
        await sleep(100)
      }
      assert.match(launched.out, /Ctrl-C stops/)
      const ports = PORT_OFFSETS.map((offset) => port + offset)
      for (const p of ports) {
        assert.equal((await get(`http://127.0.0.1:${p}`, '/healthz')).status, 200, `port ${p} serves`)
      }
      kill(launched)
      assert.deepEqual(await survivorsAfter(marker, 30_000), [], `${how}: processes left behind\n${launched.out}`)
      for (const p of ports) await assert.rejects(fetch(`http://127.0.0.1:${p}/healthz`), `${how}: port ${p} stopped`)
    } finally {
      for (const pid of processesWithEnv('SUITE_TEST_MARKER', marker)) process.kill(pid, 'SIGKILL')
    }
  })
}
