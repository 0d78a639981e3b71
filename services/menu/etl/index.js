// The menus' data: generator, loader into PostgreSQL through the kit's ETL, and the generator
// straight into PostgreSQL (seed).
import { loadTables, seedTable } from '@suite/kit/etl'
import { tables } from './tables.js'
import { PART, dishPool, menusOfPart } from './generate.js'

export { generate } from './generate.js'
export { tables }

/** Loads menus.csv of `dir` (swapping the table at once); the `load` command clears the cache. */
export function load ({ db, dir, rejectsFile = `${dir}/rejects.csv`, progress, ...limits }) {
  return loadTables({ db, dir, tables, rejectsFile, progress, ...limits })
}

const [OPEN, COMMA, CLOSE] = ['[', ',', ']'].map((c) => Buffer.from(c))

/** The menus `generate` writes, for the same seed, straight into PostgreSQL over `streams` connections. */
export function seed ({ connect, menus, seed = 1, streams, progress, partSize = PART, swapWaitSeconds }) {
  const pool = dishPool(seed).map((json) => Buffer.from(json))
  // A menu's JSON array as pieces: the dishes' pre-encoded JSON between brackets and commas.
  const pieces = (dishes) => {
    const out = [OPEN, dishes[0]]
    for (let i = 1; i < dishes.length; i++) out.push(COMMA, dishes[i])
    out.push(CLOSE)
    return out
  }
  function * rows (part) {
    for (const [id, dishes, link] of menusOfPart(part, { menus, seed, pool, partSize })) {
      yield [id, dishes && pieces(dishes), link]
    }
  }
  return seedTable({
    connect,
    spec: { table: 'menus', columns: { id: 'int4', dishes: 'jsonb', link: 'text' }, primaryKey: 'id' },
    parts: Math.ceil(menus / partSize),
    rows,
    streams,
    progress,
    swapWaitSeconds
  })
}
