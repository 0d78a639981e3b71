// The generator and the loader on a small generated set, into a real PostgreSQL; then the service on it.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { pgTarget } from '@suite/kit/etl'
import { createDatabase, migratedDatabase } from '@suite/kit/testing/env'
import { databaseEnv } from '@suite/kit/testing'
import { generate, load, seed } from '../etl/index.js'
import { DISH_TYPES, SUB_TYPES } from '../etl/generate.js'
import { spawnSync } from 'node:child_process'
import { service, startMenu, get, entry } from './fixtures.js'

const MENUS = 3000
let work, manifest
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'menus-'))
  manifest = await generate({ out: work, menus: MENUS, seed: 1 })
})
after(() => rm(work, { recursive: true, force: true }))

test('generate + load: counts, a third links, 10–19 dishes over 11 × 11 types; the API serves them', async () => {
  const url = await migratedDatabase(service)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const summary = await load({
      db: pgTarget(client), dir: work, rejectsFile: join(work, 'rejects.csv'), progress: false
    })
    const want = manifest.files['menus.csv']
    assert.equal(summary.files[0].read, want.rows)
    assert.equal(summary.files[0].loaded, MENUS)
    assert.deepEqual(summary.files[0].reasons, want.rejects) // invalid_id, invalid_dishes, duplicate_id: one each
    const { rows: [s] } = await client.query(`SELECT count(*)::int AS menus, count(link)::int AS links,
        min(jsonb_array_length(dishes))::int AS min, max(jsonb_array_length(dishes))::int AS max,
        sum(jsonb_array_length(dishes))::int AS dishes, min(id) AS first, max(id) AS last FROM menus`)
    assert.deepEqual(s,
      { menus: MENUS, links: manifest.links, min: 10, max: 19, dishes: manifest.dishes, first: 1, last: MENUS })
    assert.ok(Math.abs(s.links / MENUS - 1 / 3) < 0.03, `links ${s.links}`)
    const { rows: types } = await client.query(
      `SELECT DISTINCT d->>'dishType' AS t, d->>'subType' AS s FROM menus, jsonb_array_elements(dishes) d`
    )
    assert.deepEqual(new Set(types.map((r) => r.t)), new Set(DISH_TYPES))
    assert.deepEqual(new Set(types.map((r) => r.s)), new Set(SUB_TYPES))
    assert.equal(types.length, 121)
    const { rows: [bad] } = await client.query(`SELECT count(*)::int AS n FROM menus, jsonb_array_elements(dishes) d
      WHERE jsonb_typeof(d->'price') <> 'number' OR jsonb_typeof(d->'ingredients') <> 'string'`)
    assert.equal(bad.n, 0)

    // Same seed, same file: deterministic.
    const again = await generate({ out: join(work, 'again'), menus: MENUS, seed: 1 })
    assert.deepEqual(again, manifest)

    const svc = await startMenu({ DATABASE_URL: url })
    try {
      const { rows: [one] } = await client.query('SELECT id, dishes, link FROM menus WHERE id = 1')
      const res = await get(svc.url, '/menu/1')
      assert.deepEqual(res.body, { id: 1, dishes: one.dishes ?? [], link: one.link })
    } finally { await svc.stop() }
  } finally { await client.end() }
})

// What a database holds, as one hash: every menu, in id order.
const contents = async (client) => (await client.query(`SELECT count(*)::int AS menus, md5(string_agg(
  id || '|' || coalesce(dishes::text, '-') || '|' || coalesce(link, '-'), ',' ORDER BY id)) AS hash ` +
  'FROM menus')).rows[0]

test('seed writes the menus generate + load do, whatever the number of streams, and keeps lz4', async () => {
  const partSize = 700 // five parts, so that the streams share them
  const dbs = []
  try {
    const [viaFile, oneStream, threeStreams] = await Promise.all([1, 2, 3].map(async () => {
      const url = await migratedDatabase(service)
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      dbs.push(client)
      return Object.assign(client, { url })
    }))
    const dir = join(work, 'parts')
    await generate({ out: dir, menus: MENUS, seed: 1, partSize })
    await load({ db: pgTarget(viaFile), dir, rejectsFile: join(dir, 'rejects.csv'), progress: false })
    const connect = (client) => async () => {
      const c = new pg.Client({ connectionString: client.url })
      await c.connect()
      return { ...pgTarget(c), end: () => c.end() }
    }
    const s1 = await seed({
      connect: connect(oneStream), menus: MENUS, seed: 1, streams: 1, partSize, progress: false
    })
    const s3 = await seed({
      connect: connect(threeStreams), menus: MENUS, seed: 1, streams: 3, partSize, progress: false
    })
    assert.equal(s1.rows, MENUS)
    assert.equal(s3.rows, MENUS)
    const want = await contents(viaFile)
    assert.equal(want.menus, MENUS)
    assert.deepEqual(await contents(oneStream), want)
    assert.deepEqual(await contents(threeStreams), want)
    for (const client of [viaFile, threeStreams]) {
      const { rows: [c] } = await client.query(
        "SELECT attcompression FROM pg_attribute WHERE attrelid = 'menus'::regclass AND attname = 'dishes'"
      )
      assert.equal(c.attcompression, 'l', 'the swapped-in table keeps the migration\'s lz4')
    }
  } finally {
    await Promise.all(dbs.map((c) => c.end()))
  }
})

test('the seed command: migrates, fills, answers; a wrong option is one line and exit 2', async () => {
  const url = await createDatabase('menuseedcli')
  const run = (...args) => spawnSync(process.execPath, [entry, 'seed', ...args], {
    env: { ...process.env, ...databaseEnv(url), LOG_LEVEL: 'info' }, encoding: 'utf8'
  })
  const done = run('--menus', '2500', '--streams', '2')
  assert.equal(done.status, 0, done.stderr + done.stdout)
  assert.match(done.stderr, /^menus: 2,500 rows in [\d.]+ s \(copy [\d.]+ s, indexes [\d.]+ s, swap [\d.]+ s\)$/m)
  const bad = run('--menus', 'many')
  assert.equal(bad.status, 2)
  assert.equal(bad.stderr.split('\n')[0], 'menu seed: --menus must be a whole number (got "many")')
  const svc = await startMenu({ DATABASE_URL: url })
  try {
    const res = await get(svc.url, '/menu/2500')
    assert.equal(res.status, 200)
    assert.equal(res.body.id, 2500)
  } finally { await svc.stop() }
})
