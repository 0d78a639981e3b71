// A read after a PUT never returns the old menu: 2 workers on one Redis, and 2 processes sharing it,
// on both GET routes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { redisUrl } from '@suite/kit/testing/env'
import { menuDatabase, startMenu, get, put } from './fixtures.js'

const dish = (i) => ({
  dishType: 'Specials', subType: 'Seasonal', dish: `Dish of round ${i}`, price: i, ingredients: 'x'
})

async function neverStale (writer, reader) {
  const ids = [1, 2, 3, 4]
  // Warm every cache first, so that a stale entry would show.
  for (let k = 0; k < 3; k++) {
    for (const id of ids) {
      for (const s of new Set([writer, reader])) {
        await get(s.url, `/menu/${id}`)
        await get(s.url, `/restaurants/${id}/menu`)
      }
    }
  }
  for (let i = 1; i <= 40; i++) {
    const id = ids[i % ids.length]
    // Alternate dish and link menus.
    const body = i % 2 ? { dishes: [dish(i)] } : { link: `https://menus.example/${i}` }
    const res = await put(writer.url, `/restaurants/${id}/menu`, body)
    assert.equal(res.status, 200)
    // Several reads, so both workers (kernel-spread connections) are hit.
    for (let r = 0; r < 4; r++) {
      for (const path of [`/menu/${id}`, `/restaurants/${id}/menu`]) {
        const got = (await get(reader.url, path)).body
        assert.deepEqual(got, res.body, `round ${i}: stale read on ${path}`)
      }
    }
  }
}

test('redis cache, 2 workers: never stale after PUT', async () => {
  const svc = await startMenu({ DATABASE_URL: await menuDatabase(10), REDIS_URL: `${redisUrl}/7`, WORKERS: '2' })
  try { await neverStale(svc, svc) } finally { await svc.stop() }
})

test('memory cache, 2 workers: never stale after PUT', async () => {
  const svc = await startMenu({ DATABASE_URL: await menuDatabase(10), WORKERS: '2' })
  try { await neverStale(svc, svc) } finally { await svc.stop() }
})

test('redis cache, 2 processes × 2 workers: writes on one, reads on the other, never stale', async () => {
  const env = { DATABASE_URL: await menuDatabase(10), REDIS_URL: `${redisUrl}/8`, WORKERS: '2' }
  const [a, b] = await Promise.all([startMenu(env), startMenu(env)])
  try {
    await neverStale(a, b)
    await neverStale(b, a)
  } finally { await Promise.all([a.stop(), b.stop()]) }
})
