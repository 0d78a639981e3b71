// The menus' data: generator, and loader into PostgreSQL through the kit's ETL.
import { loadTables } from '@suite/kit/etl'
import { tables } from './tables.js'

export { generate } from './generate.js'
export { tables }

/** Loads menus.csv of `dir` (swapping the table at once); the `load` command clears the cache. */
export function load ({ db, dir, rejectsFile = `${dir}/rejects.csv`, progress }) {
  return loadTables({ db, dir, tables, rejectsFile, progress })
}
