import { prepared, httpError, preconditions, batchedRows } from '@suite/kit'
import * as sql from './sql.js'
import * as schemas from './schemas.js'
import { CACHE_PREFIX } from './service.js'

const keys = (id) => [`${CACHE_PREFIX}restaurant:${id}`, `${CACHE_PREFIX}compat:${id}`]

// The preconditions as sql.js takes them: [If-Match versions or null, If-None-Match versions or null for *].
function conditions (request) {
  const { ifMatch, ifNoneMatch } = preconditions(request.headers)
  return [Array.isArray(ifMatch) ? ifMatch : null, ifNoneMatch === '*' ? null : ifNoneMatch ?? []]
}
const failed = (id, current) =>
  httpError(412, `If-Match / If-None-Match do not hold for the current version of restaurant ${id} (ETag "${current}")`)

const compatOf = (d) => [{
  id: d.id,
  name: d.name,
  address: d.address,
  number: d.phone,
  picture: d.picture,
  stars: d.stars,
  quality: d.quality,
  delivery: d.delivery,
  accuracy: d.accuracy
}]

/** Restaurant profiles: cached reads that a committed write invalidates before it answers. */
export default async function routes (app) {
  const { pg, cache } = app
  const query = async (q, values) => (await pg.query(prepared(pg, q, values))).rows[0]

  // The misses of a turn share one query (batchedRows), then cached text; the answer carries ETag
  // "<version>" (see reply.sendCached).
  const read = batchedRows(pg, sql.read)
  const sendProfile = (reply, key, id, shape) => reply.sendCached(key, async () => {
    const row = await read(id)
    return row && { doc: shape(row.doc), version: row.version }
  }, { versioned: true })

  // After a commit, before the answer: no reader anywhere gets an older version from then on.
  const invalidate = (id, version) => Promise.all(keys(id).map((k) => cache.invalidate(k, version)))

  app.get('/restaurants/:id', { schema: schemas.getRestaurant }, async (request, reply) => {
    const { id } = request.params
    if (!await sendProfile(reply, keys(id)[0], id, (d) => d)) throw httpError(404, `restaurant ${id} not found`)
    return reply
  })

  app.get('/restaurants/:id/profile', { schema: schemas.getProfile }, async (request, reply) => {
    const { id } = request.params
    if (!await sendProfile(reply, keys(id)[1], id, compatOf)) return []
    return reply
  })

  app.post('/restaurants', { schema: schemas.createRestaurant }, async (request, reply) => {
    const row = await query(sql.create, [JSON.stringify(request.body)])
    // A GET before the insert may have cached "not found" at version 0 for this id.
    await invalidate(row.doc.id, row.version)
    reply.code(201).header('location', `/restaurants/${row.doc.id}`).header('etag', `"${row.version}"`)
    return row.doc
  })

  const write = async (request, reply) => {
    const { id } = request.params
    const row = await query(sql.update, [JSON.stringify(request.body), id, ...conditions(request)])
    if (row.version === null) {
      if (row.current === null) throw httpError(404, `restaurant ${id} not found`)
      throw failed(id, row.current)
    }
    await invalidate(id, row.version)
    reply.header('etag', `"${row.version}"`)
    return row.doc
  }
  app.put('/restaurants/:id', { schema: schemas.replaceRestaurant }, write)
  app.patch('/restaurants/:id', { schema: schemas.patchRestaurant }, write)

  app.delete('/restaurants/:id', { schema: schemas.deleteRestaurant }, async (request, reply) => {
    const { id } = request.params
    const row = await query(sql.remove, [id, ...conditions(request)])
    if (row.version === null) {
      if (row.current === null) throw httpError(404, `restaurant ${id} not found`)
      throw failed(id, row.current)
    }
    // Ids are never reused, so version + 1 outranks every cached copy of the deleted row.
    await invalidate(id, row.version + 1)
    return reply.code(204).send()
  })
}
