// A read after a successful write never returns the old value: across the worker threads of one
// process and across two processes (replicas) sharing one Redis, on both read routes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { redisUrl } from '@suite/kit/testing/env'
import { profileDatabase, startProfile, send, body } from './fixtures.js'

const fresh = { connection: 'close' } // a new connection each time, so reads spread over workers

async function readsAll (readers, id) {
  return Promise.all(readers.flatMap((base) => [
    send(base, 'GET', `/restaurants/${id}`, undefined, fresh),
    send(base, 'GET', `/restaurants/${id}/profile`, undefined, fresh)
  ]))
}

// Each round writes on one server (PUT, PATCH or DELETE, then re-creates) and reads on all of them.
async function readAfterWrite (writers, readers, rounds = 60) {
  // Warm every cache with the first values, so that staleness would show.
  const ids = [1, 2, 3]
  for (const id of ids) await readsAll(readers, id)
  for (let i = 1; i <= rounds; i++) {
    const writer = writers[i % writers.length]
    let id = ids[i % ids.length]
    const kind = ['PUT', 'PATCH', 'DELETE'][i % 3]
    if (kind === 'DELETE') {
      assert.equal((await send(writer, 'DELETE', `/restaurants/${id}`, undefined, fresh)).status, 204)
      for (const r of await readsAll(readers, id)) {
        assert.ok(r.status === 404 || (Array.isArray(r.body) && r.body.length === 0),
          `round ${i}: read after DELETE got ${r.status} ${JSON.stringify(r.body)}`)
      }
      // Replace it with a new restaurant for the next rounds (read once, so it is cached).
      const created = await send(writer, 'POST', '/restaurants', body({ name: `new ${i}` }), fresh)
      assert.equal(created.status, 201)
      ids[i % ids.length] = id = created.body.id
      await readsAll(readers, id)
      continue
    }
    const name = `${kind} ${i} — l'été`
    const res = await send(writer, kind, `/restaurants/${id}`, kind === 'PUT' ? body({ name }) : { name }, fresh)
    assert.equal(res.status, 200)
    const etag = res.headers.get('etag')
    for (const r of await readsAll(readers, id)) {
      const got = Array.isArray(r.body) ? r.body[0]?.name : r.body.name
      assert.equal(got, name, `round ${i}: stale read after ${kind}`)
      assert.equal(r.headers.get('etag'), etag, `round ${i}: stale ETag`)
    }
  }
}

test('redis cache, 2 workers: a read after a write never returns the old value', async () => {
  const svc = await startProfile({ DATABASE_URL: await profileDatabase(20), REDIS_URL: `${redisUrl}/12`, WORKERS: '2' })
  try {
    await readAfterWrite([svc.url], [svc.url, svc.url, svc.url])
  } finally {
    await svc.stop()
  }
})

test('memory cache, 2 workers: a read after a write never returns the old value', async () => {
  const svc = await startProfile({ DATABASE_URL: await profileDatabase(20), WORKERS: '2' })
  try {
    await readAfterWrite([svc.url], [svc.url, svc.url, svc.url])
  } finally {
    await svc.stop()
  }
})

test('redis cache, 2 replicas × 2 workers: writes on one, reads on the other, never stale', async () => {
  const env = { DATABASE_URL: await profileDatabase(20), REDIS_URL: `${redisUrl}/13`, WORKERS: '2' }
  const [a, b] = await Promise.all([startProfile(env), startProfile(env)])
  try {
    await readAfterWrite([a.url, b.url], [b.url, a.url, b.url])
  } finally {
    await Promise.all([a.stop(), b.stop()])
  }
})

// Without Redis each replica caches in its own memory, which a write on the other replica cannot
// reach: the bound is CACHE_MEMORY_TTL_MS (1 s) from the moment the cached data was read. A read sent
// more than 1 s after a write was acknowledged must see it, on both read routes.
test('no Redis, 2 replicas: no read is stale more than 1 s after a write acknowledged on the other ' +
  'replica', async () => {
  const env = { DATABASE_URL: await profileDatabase(20) }
  const [a, b] = await Promise.all([startProfile(env), startProfile(env)])
  try {
    let staleSeen = 0
    for (let i = 1; i <= 6; i++) {
      const id = 1 + (i % 3)
      for (let k = 0; k < 5; k++) await readsAll([b.url], id) // cached on b, and kept hot
      const name = `write ${i}`
      assert.equal((await send(a.url, 'PATCH', `/restaurants/${id}`, { name }, fresh)).status, 200)
      const acked = performance.now()
      while (performance.now() - acked < 1500) {
        const sentAt = performance.now() - acked
        for (const r of await readsAll([b.url], id)) {
          const got = Array.isArray(r.body) ? r.body[0]?.name : r.body.name
          if (got !== name) {
            staleSeen++
            assert.ok(sentAt < 1000, `round ${i}: stale ${Math.round(sentAt)} ms after the write was acknowledged`)
          }
        }
        await sleep(50)
      }
    }
    // Not asserted (timing), but shows what the bound is for: reads just after the write were stale.
    console.log(`stale reads within the first second after a write: ${staleSeen}`)
  } finally {
    await Promise.all([a.stop(), b.stop()])
  }
})
