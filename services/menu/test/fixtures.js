// A few menus (dishes and links) in a fresh database, and the service on it.
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startService } from '@suite/kit/testing'
import { createDatabase } from '@suite/kit/testing/env'
export { get, metric } from '@suite/kit/testing'

export const entry = fileURLToPath(new URL('../src/cli.js', import.meta.url))
export const migrations = fileURLToPath(new URL('../migrations/', import.meta.url))

export const TRICKY = 'Crème brûlée "maison", l\'original 🍮'
export const DISHES = [
  { dishType: 'Desserts', subType: 'Classic', dish: TRICKY, price: 9.5, ingredients: 'cream, sugar, vanilla' },
  { dishType: 'Entrees', subType: 'Seafood', dish: 'Seared Salmon', price: 24, ingredients: 'salmon, lemon' }
]

// Menus 1..count: every third (3, 6, …) a link, the others two dishes.
export async function menuDatabase (count = 30) {
  const url = await createDatabase('menu')
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await migrate(client, migrations)
    await client.query(`INSERT INTO menus (id, dishes, link)
      SELECT id, CASE WHEN id % 3 = 0 THEN NULL ELSE $1::jsonb END,
             CASE WHEN id % 3 = 0 THEN 'https://menus.example/r/' || id END
      FROM generate_series(1, $2::int) id`, [JSON.stringify(DISHES), count])
  } finally {
    await client.end()
  }
  return url
}

export function startMenu (env) {
  return startService({ entry, env: { WORKERS: '1', ...env } })
}

/** PUT a JSON body; returns { status, body }. */
export async function put (base, path, body) {
  const res = await fetch(base + path, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const text = await res.text()
  let parsed = text
  try { parsed = JSON.parse(text) } catch {}
  return { status: res.status, body: parsed }
}
