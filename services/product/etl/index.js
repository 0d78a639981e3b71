// The product catalogue's data: generator, and loader into PostgreSQL through the kit's ETL.
import { loadTables } from '@suite/kit/etl'
import { tables } from './tables.js'

export { generate } from './generate.js'
export { tables }

/**
 * Loads the six Atelier CSVs of `dir` (swapping all tables at once). Every cached answer is stale
 * afterwards: the caller clears the cache (the `load` command does).
 * @returns the loader's summary
 */
export function load ({ db, dir, rejectsFile = `${dir}/rejects.csv`, progress, ...limits }) {
  return loadTables({ db, dir, tables, rejectsFile, progress, ...limits })
}
