import { queryDocument, httpError } from '@suite/kit'
import * as sql from './sql.js'
import * as schemas from './schemas.js'

// Every cache key starts with this; a data load deletes them all.
export const CACHE_PREFIX = 'menu:'
const key = (id) => `${CACHE_PREFIX}menu:${id}`

/** Menus: GET is one query, then cached text; PUT replaces the menu and invalidates the cache. */
export default async function routes (app) {
  const { pg } = app

  // Both GET routes serve the same document, so they share one cache key.
  const getMenu = async (request, reply) => {
    const { id } = request.params
    const found = await reply.sendCached(key(id), async () => {
      const doc = await queryDocument(pg, sql.menu, [id])
      return doc && { doc, version: doc.version }
    }, { versioned: true })
    if (!found) throw httpError(404, `menu ${id} not found`)
    return reply
  }
  app.get('/restaurants/:id/menu', { schema: schemas.getMenu }, getMenu)
  // The original client's path.
  app.get('/menu/:id', { schema: schemas.getMenu }, getMenu)

  app.put('/restaurants/:id/menu', { schema: schemas.putMenu }, async (request, reply) => {
    const { dishes, link } = request.body
    if ((dishes === undefined) === (link === undefined)) {
      throw httpError(400, dishes === undefined ? 'body must have either dishes or link' : 'body/link must not be given with dishes')
    }
    const { rows: [row] } = await pg.query({ ...sql.putMenu, values: [request.params.id, dishes ? JSON.stringify(dishes) : null, link ?? null] })
    // Committed: invalidate before answering, so no reader anywhere gets the old menu afterwards.
    await app.cache.invalidate(key(row.json.id), row.json.version)
    reply.code(row.created ? 201 : 200).header('etag', `"${row.json.version}"`)
    return row.json
  })
}
