import { batchedRows, prepared, httpError, preconditions } from '@suite/kit'
import * as sql from './sql.js'
import * as schemas from './schemas.js'
import { CACHE_PREFIX } from './service.js'

const key = (id) => `${CACHE_PREFIX}menu:${id}`

// Both or neither of dishes and link, named before schema validation (its min/maxProperties would
// only say "must NOT have more than 1 properties").
async function eitherDishesOrLink (request) {
  const body = request.body
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return
  if (Object.hasOwn(body, 'dishes') && Object.hasOwn(body, 'link')) {
    throw httpError(400, 'body/link must not be given with dishes')
  }
  if (Object.keys(body).length === 0) throw httpError(400, 'body must have either dishes or link')
}

/** Menus: GET is one query, then cached text; PUT replaces the menu and invalidates the cache. */
export default async function routes (app) {
  const { pg } = app

  const read = batchedRows(pg, sql.menus) // the misses of a turn share one query
  // Both GET routes serve the same document, so they share one cache key.
  const getMenu = async (request, reply) => {
    const { id } = request.params
    const found = await reply.sendCached(key(id), async () => {
      const doc = (await read(id))?.json
      return doc && { doc, version: doc.version }
    }, { versioned: true })
    if (!found) throw httpError(404, `menu ${id} not found`)
    return reply
  }
  app.get('/restaurants/:id/menu', { schema: schemas.getMenu }, getMenu)
  // The original client's path.
  app.get('/menu/:id', { schema: schemas.getMenu }, getMenu)

  app.put('/restaurants/:id/menu', {
    schema: schemas.putMenu, preValidation: eitherDishesOrLink
  }, async (request, reply) => {
    const { id } = request.params
    const { dishes, link } = request.body
    const { ifMatch, ifNoneMatch } = preconditions(request.headers)
    const values = [id, dishes ? JSON.stringify(dishes) : null, link ?? null]
    const noneMatch = ifNoneMatch === '*' ? null : ifNoneMatch ?? []
    const { rows: [row] } = await pg.query(ifMatch === undefined
      ? prepared(pg, sql.putMenu, [...values, noneMatch])
      : prepared(pg, sql.replaceMenu, [...values, ifMatch === '*' ? null : ifMatch, noneMatch]))
    if (row.json === null) {
      const current = row.current === null ? 'it has none' : `ETag "${row.current}"`
      throw httpError(412, `If-Match / If-None-Match do not hold for the menu of restaurant ${id} (${current})`)
    }
    // Committed: invalidate before answering, so no reader anywhere gets the old menu afterwards.
    await app.cache.invalidate(key(row.json.id), row.json.version)
    reply.code(row.created ? 201 : 200).header('etag', `"${row.json.version}"`)
    return row.json
  })
}
