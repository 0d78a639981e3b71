// A migrated database with a few generated restaurants loaded through the ETL, and the service on it.
import { fileURLToPath } from 'node:url'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pgTarget } from '@suite/kit/etl'
import { startService } from '@suite/kit/testing'
import { migratedDatabase } from '@suite/kit/testing/env'
import service from '../src/service.js'
import { generate, load } from '../etl/index.js'
export { get, metric, send } from '@suite/kit/testing'

export const entry = fileURLToPath(new URL('../src/cli.js', import.meta.url))
export { service }
export const TRICKY_NAME = 'Ünïcødé "quoted", comma; \'apostrophe\' O\'Brien\'s 🍜 — 寿司'

/** A valid full body; `over` replaces some fields. */
export const body = (over = {}) => ({
  name: 'Test Kitchen',
  address: '1 Main St, Springfield',
  phone: '(555) 010-0000',
  picture: 'https://images.example/r.jpg',
  cuisine: 'Thai',
  price_range: 2,
  stars: 4.5,
  quality: 90,
  delivery: 80,
  accuracy: 70,
  ...over
})

/** A migrated database with `restaurants` generated rows loaded (0: empty); returns its URL. */
export function profileDatabase (restaurants = 50) {
  return migratedDatabase(service, async (client) => {
    if (restaurants === 0) return
    const dir = await mkdtemp(join(tmpdir(), 'profile-'))
    try {
      await generate({ out: dir, restaurants, seed: 1 })
      await load({ db: pgTarget(client), dir, progress: false })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
}

export function startProfile (env) {
  return startService({ entry, env: { WORKERS: '1', ...env } })
}
