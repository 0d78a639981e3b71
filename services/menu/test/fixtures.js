// A few menus (dishes and links) in a fresh database, and the service on it.
import { fileURLToPath } from 'node:url'
import { startService, send } from '@suite/kit/testing'
import { migratedDatabase } from '@suite/kit/testing/env'
import service from '../src/service.js'
export { get, metric } from '@suite/kit/testing'

export const entry = fileURLToPath(new URL('../src/cli.js', import.meta.url))
export { service }

const TRICKY = 'Crème brûlée "maison", l\'original 🍮'
export const DISHES = [
  { dishType: 'Desserts', subType: 'Classic', dish: TRICKY, price: 9.5, ingredients: 'cream, sugar, vanilla' },
  { dishType: 'Entrees', subType: 'Seafood', dish: 'Seared Salmon', price: 24, ingredients: 'salmon, lemon' }
]

// Menus 1..count: every third (3, 6, …) a link, the others two dishes.
export function menuDatabase (count = 30) {
  return migratedDatabase(service, (client) => client.query(`INSERT INTO menus (id, dishes, link)
    SELECT id, CASE WHEN id % 3 = 0 THEN NULL ELSE $1::jsonb END,
           CASE WHEN id % 3 = 0 THEN 'https://menus.example/r/' || id END
    FROM generate_series(1, $2::int) id`, [JSON.stringify(DISHES), count]))
}

export function startMenu (env) {
  return startService({ entry, env: { WORKERS: '1', ...env } })
}

/** PUT a JSON body; returns { status, headers, body }. */
export const put = (base, path, body) => send(base, 'PUT', path, body)
