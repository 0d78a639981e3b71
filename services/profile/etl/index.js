// Restaurant profiles' data: generator, and loader into PostgreSQL through the kit's ETL.
import { loadTables } from '@suite/kit/etl'
import { tables } from './tables.js'

export { generate } from './generate.js'
export { tables }

/** Loads restaurants.csv of `dir` (atomic table swap; the id sequence moves past the loaded ids). */
export function load ({ db, dir, rejectsFile = `${dir}/rejects.csv`, progress, ...limits }) {
  return loadTables({ db, dir, tables, rejectsFile, progress, ...limits })
}
