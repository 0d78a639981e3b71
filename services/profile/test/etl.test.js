// The restaurants generator and loader: counts, rejects by reason, and the id sequence after a load.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import pg from 'pg'
import { pgTarget } from '@suite/kit/etl'
import { createDatabase, migratedDatabase, redisUrl } from '@suite/kit/testing/env'
import { databaseEnv } from '@suite/kit/testing'
import { generate, load } from '../etl/index.js'
import { service, entry, startProfile, send, body } from './fixtures.js'

let work
before(async () => { work = await mkdtemp(join(tmpdir(), 'profile-etl-')) })
after(() => rm(work, { recursive: true, force: true }))

test('the generator is deterministic', async () => {
  await generate({ out: join(work, 'x'), restaurants: 500, seed: 3 })
  await generate({ out: join(work, 'y'), restaurants: 500, seed: 3 })
  const [x, y] = await Promise.all(['x', 'y'].map((d) => readFile(join(work, d, 'restaurants.csv'), 'utf8')))
  assert.equal(x, y)
})

test('every row is loaded or rejected by its reason; the id sequence continues past the loaded ids', async () => {
  const dir = join(work, 'a')
  const manifest = await generate({ out: dir, restaurants: 3000, seed: 1 })
  const url = await migratedDatabase(service)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const summary = await load({ db: pgTarget(client), dir, rejectsFile: join(work, 'rejects.csv'), progress: false })
    const [f] = summary.files
    const want = manifest.files['restaurants.csv']
    assert.equal(f.read, want.rows)
    assert.deepEqual(f.reasons, want.rejects)
    assert.equal(f.loaded, want.rows - 2)
    const { rows: [{ n, max }] } = await client.query('SELECT count(*)::int AS n, max(id) AS max FROM restaurants')
    assert.equal(n, 2999)
    assert.equal(max, 3000)
    const { rows: [nine] } = await client.query('SELECT name FROM restaurants WHERE id = 9')
    assert.notEqual(nine.name, 'Duplicate of nine', 'the first of a duplicated id is kept')
    const rejects = await readFile(join(work, 'rejects.csv'), 'utf8')
    assert.match(rejects, /invalid_stars/)
    assert.match(rejects, /duplicate_id/)

    // Loading again (a table swap) keeps the sequence default and moves it again.
    await load({ db: pgTarget(client), dir, rejectsFile: join(work, 'rejects.csv'), progress: false })
    const svc = await startProfile({ DATABASE_URL: url, REDIS_URL: `${redisUrl}/11` })
    try {
      const created = await send(svc.url, 'POST', '/restaurants', body())
      assert.equal(created.status, 201)
      assert.equal(created.body.id, 3001)
      assert.equal((await send(svc.url, 'GET', '/restaurants/3000')).status, 200)
    } finally {
      await svc.stop()
    }
  } finally {
    await client.end()
  }
})

test('the CLI generates and loads (in its worker), then clears the cache', async () => {
  const dir = join(work, 'cli')
  const url = await createDatabase('profile_cli')
  const env = { ...process.env, ...databaseEnv(url), REDIS_URL: `${redisUrl}/11`, LOG_LEVEL: 'warn' }
  const bad = spawnSync(process.execPath, [entry, 'generate', '--out', dir, '--restaurants', 'many'],
    { env, encoding: 'utf8' })
  assert.equal(bad.status, 2)
  assert.equal(bad.stderr.split('\n')[0], 'profile generate: --restaurants must be a whole number (got "many")')
  const gen = spawnSync(process.execPath, [entry, 'generate', '--out', dir, '--restaurants', '1000'],
    { env, encoding: 'utf8' })
  assert.equal(gen.status, 0, gen.stderr)
  assert.equal(spawnSync(process.execPath, [entry, 'load'], { env, encoding: 'utf8' }).stderr.split('\n')[0],
    'profile load: --dir DIR is required')
  const loaded = spawnSync(process.execPath, [entry, 'load', '--dir', dir], { env, encoding: 'utf8' })
  assert.equal(loaded.status, 0, loaded.stderr + loaded.stdout)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows: [{ n }] } = await client.query('SELECT count(*)::int AS n FROM restaurants')
    assert.equal(n, 999)
    const { rows: [{ next }] } = await client.query("SELECT nextval('restaurants_id_seq')::int AS next")
    assert.equal(next, 1001)
    // A seed Job run again (an upgrade re-creates it) with --if-empty leaves the live data alone:
    // a restaurant written since the first load survives; without the flag the load replaces it.
    await client.query('INSERT INTO restaurants (name, address, phone, picture, cuisine, price_range, stars, ' +
      "quality, delivery, accuracy) VALUES ('written after the seed', '', '', '', '', 1, 0, 0, 0, 0)")
    const again = spawnSync(process.execPath, [entry, 'load', '--dir', dir, '--if-empty', '--wait', '5'],
      { env: { ...env, LOG_LEVEL: 'info' }, encoding: 'utf8' })
    assert.equal(again.status, 0, again.stderr + again.stdout)
    assert.match(again.stdout + again.stderr, /restaurants already holds data: left as it is/)
    const kept = await client.query("SELECT count(*)::int AS n FROM restaurants WHERE name = 'written after the seed'")
    assert.equal(kept.rows[0].n, 1)
    assert.equal(spawnSync(process.execPath, [entry, 'load', '--dir', dir, '--wait', 'soon'], { env, encoding: 'utf8' })
      .stderr.split('\n')[0], 'profile load: --wait must be a whole number (got "soon")')
  } finally {
    await client.end()
  }
})
