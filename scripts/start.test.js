// The quick start works: `npm start` with no database or cache server serves every service's sample.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createServer } from 'node:net'
import { once } from 'node:events'
import { get } from '@suite/kit/testing'

// npm start takes PORT and the 3 ports after it: find 4 in a row that are free now.
async function fourFreePorts () {
  for (;;) {
    const first = createServer().listen(0, '0.0.0.0')
    await once(first, 'listening')
    const base = first.address().port
    const rest = [1, 2, 3].map((i) => createServer().listen(base + i, '0.0.0.0'))
    const ok = await Promise.all(rest.map((srv) => new Promise((resolve) => { srv.once('listening', () => resolve(true)); srv.once('error', () => resolve(false)) })))
    await Promise.all([first, ...rest].map((srv) => new Promise((resolve) => srv.close(() => resolve()))))
    if (ok.every(Boolean) && base + 3 < 65536) return base
  }
}

// `npm start` with no database or cache server (the embedded default) on PORT=port; its output
// gathers in `launched.out`.
function launch (port, sampleSize) {
  const { DATABASE_URL, REDIS_URL, ...env } = process.env
  const child = spawn(process.execPath, [fileURLToPath(new URL('./start.js', import.meta.url))], {
    env: { ...env, PORT: String(port), SAMPLE_SIZE: String(sampleSize), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const launched = { child, out: '' }
  child.stdout.on('data', (d) => { launched.out += d })
  child.stderr.on('data', (d) => { launched.out += d })
  launched.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  return launched
}

test('npm start runs the suite on embedded PostgreSQL and stops cleanly', async () => {
  const port = await fourFreePorts() // product; profile, menu, flows on the next three
  const launched = launch(port, 300)
  const { child, exited } = launched
  try {
    for (let i = 0; i < 600 && !launched.out.includes('product ready'); i++) {
      assert.equal(child.exitCode, null, launched.out)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.match(launched.out, new RegExp(`product ready: http://localhost:${port}/products`))
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
    assert.deepEqual((await get(flows, '/flows?hour=1')).body, [{ src_app: 'a', dest_app: 'b', vpc_id: 'v', bytes_tx: "5", bytes_rx: "7", hour: 1 }])
  } finally {
    child.kill('SIGTERM')
  }
  assert.deepEqual(await exited, { code: 0, signal: null }, launched.out)
})

test('npm start stops everything and exits 1 when a service cannot start', async () => {
  const port = await fourFreePorts()
  const taken = createServer().listen(port + 3, '0.0.0.0') // flows' port
  await once(taken, 'listening')
  try {
    const launched = launch(port, 50)
    const { code } = await launched.exited
    assert.equal(code, 1, launched.out)
    assert.match(launched.out, /flows exited with 1; stopping/)
    await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'product was stopped too')
  } finally {
    taken.close()
  }
})
