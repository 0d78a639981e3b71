// --original DIR: the profile service this suite re-implements (GrubbyPlutos/Restaurant-Profile-Service:
// Express, pg, redis), run from a checkout prepared by hand (docs/benchmarks.md, "The original side by
// side") and measured beside ours on the same rows and the same traffic. It reads our table through a
// view shaped as its own (`SELECT * FROM restaurants WHERE id=<n>`, its query, becomes a probe of our
// primary key) in a schema of its own, as a role whose search_path is that schema: pg 8.0.3 cannot set
// one per connection. It runs as it shipped: plain node, one process, its own Redis database (it
// empties that database when it starts).
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { UserError } from '@suite/kit/args'
import { startService } from '@suite/kit/testing'

const ROLE = 'original_profile'
const REDIS_DB = 15 // ours use 0 (and 1 with bench:compare)

// Its columns from ours (its database/postgresql/schema.sql: stars a smallint, phone named number).
const ITS_TABLE = `
  CREATE SCHEMA original;
  CREATE VIEW original.restaurants AS
    SELECT id, name, address, phone AS number, picture, round(stars)::smallint AS stars, quality, delivery, accuracy
    FROM public.restaurants;
  GRANT USAGE ON SCHEMA original TO ${ROLE};
  GRANT SELECT ON original.restaurants TO ${ROLE};`

/** Is DIR a prepared checkout of the original? Throws a line saying what is missing. */
export function checkOriginal (dir) {
  const missing = ['server/index.js', 'node_modules/express', 'node_modules/pg', 'node_modules/redis']
    .filter((f) => !existsSync(join(dir, f)))
  if (missing.length) {
    throw new UserError(`--original ${dir}: no ${missing.join(', ')} ` +
      '(prepare it as docs/benchmarks.md says, then npm install --omit=dev there)')
  }
}

/**
 * Starts the original in `dir` on the rows of `db` (a connected pg.Client, superuser) and database
 * REDIS_DB of `redis`.
 */
export async function startOriginal (dir, db, redis) {
  const password = randomBytes(12).toString('hex')
  await db.query(`CREATE ROLE ${ROLE} LOGIN PASSWORD '${password}'`)
  await db.query(`ALTER ROLE ${ROLE} IN DATABASE "${db.database}" SET search_path = original`)
  await db.query(ITS_TABLE)
  return startService({
    entry: join(dir, 'server', 'index.js'),
    env: {
      PGHOST: db.host,
      PGPORT: String(db.port),
      PGUSER: ROLE,
      PGPASSWORD: password,
      PGDATABASE: db.database,
      REDIS_URL: `${redis.url}/${REDIS_DB}`
    },
    readyPath: '/restaurants/1/profile'
  })
}
