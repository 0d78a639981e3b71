// Restaurant profiles' data: generator, and loader into PostgreSQL through the kit's ETL.
import { loadTables } from '@suite/kit/etl'
import { tables } from './tables.js'

export { generate } from './generate.js'
export { tables }

/**
 * Loads restaurants.csv of `dir` (atomic table swap), then moves the id sequence past the highest
 * loaded id so that POST never collides with a loaded row.
 * TODO(kit): loadTables could take an `afterSwap(db)` hook (or a spec `sequence: 'restaurants_id_seq'`).
 */
export async function load ({ db, dir, rejectsFile = `${dir}/rejects.csv`, progress }) {
  const summary = await loadTables({ db, dir, tables, rejectsFile, progress })
  await db.query(`SELECT setval('restaurants_id_seq', greatest((SELECT max(id) FROM restaurants), 1),
    (SELECT max(id) IS NOT NULL FROM restaurants))`)
  return summary
}
