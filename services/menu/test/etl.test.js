// The generator and the loader on a small generated set, into a real PostgreSQL; then the service on it.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { pgTarget } from '@suite/kit/etl'
import { createDatabase } from '@suite/kit/testing/env'
import { generate, load } from '../etl/index.js'
import { DISH_TYPES, SUB_TYPES } from '../etl/generate.js'
import { migrations, startMenu, get } from './fixtures.js'

const MENUS = 3000
let work, manifest
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'menus-'))
  manifest = await generate({ out: work, menus: MENUS, seed: 1 })
})
after(() => rm(work, { recursive: true, force: true }))

test('generate + load: counts, a third links, 10–19 dishes over 11 × 11 types; the API serves them', async () => {
  const url = await createDatabase('menuetl')
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await migrate(client, migrations)
    const summary = await load({ db: pgTarget(client), dir: work, rejectsFile: join(work, 'rejects.csv'), progress: false })
    const want = manifest.files['menus.csv']
    assert.equal(summary.files[0].read, want.rows)
    assert.equal(summary.files[0].loaded, MENUS)
    assert.deepEqual(summary.files[0].reasons, want.rejects) // invalid_id, invalid_dishes, duplicate_id: one each
    const { rows: [s] } = await client.query(`SELECT count(*)::int AS menus, count(link)::int AS links,
        min(jsonb_array_length(dishes))::int AS min, max(jsonb_array_length(dishes))::int AS max,
        sum(jsonb_array_length(dishes))::int AS dishes, min(id) AS first, max(id) AS last FROM menus`)
    assert.deepEqual(s, { menus: MENUS, links: manifest.links, min: 10, max: 19, dishes: manifest.dishes, first: 1, last: MENUS })
    assert.ok(Math.abs(s.links / MENUS - 1 / 3) < 0.03, `links ${s.links}`)
    const { rows: types } = await client.query(`SELECT DISTINCT d->>'dishType' AS t, d->>'subType' AS s FROM menus, jsonb_array_elements(dishes) d`)
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
