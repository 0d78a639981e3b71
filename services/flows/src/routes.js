import { prepared, httpError, sharedReads } from '@suite/kit'
import { createWriter } from './writer.js'
import * as sql from './sql.js'
import * as schemas from './schemas.js'

/**
 * POST /flows adds records through this worker's group-commit writer; GET /flows reads the totals.
 * No response cache: the totals of the current hour change with every flush, so a cached answer
 * would be invalidated about as often as it is read, and read-after-write across replicas would
 * need a version row per hour bumped by every flush — a hot row on the write path. One indexed
 * query per GET is exact and cheap.
 */
export default async function routes (app) {
  const { pg, config } = app
  const writer = createWriter({ pool: pg, config, registry: app.metrics.registry, log: app.log })

  app.post('/flows', {
    schema: schemas.postFlows({ maxBatch: config.FLOWS_MAX_BATCH, bodyLimit: config.FLOWS_BODY_LIMIT }),
    bodyLimit: config.FLOWS_BODY_LIMIT
  }, async (request, reply) => {
    try {
      return await writer.write(request.body, request.headers['idempotency-key'])
    } catch (err) {
      if (err.statusCode === 504) reply.header('retry-after', '1') // outcome unknown: see the writer
      if (err.statusCode) throw err
      // Any other failure (database down, a timeout, a statement cancelled) happened before the group's
      // COMMIT or was PostgreSQL's answer to it: nothing of this batch is stored, sending it again is safe.
      reply.header('retry-after', '1')
      throw httpError(503, 'the batch was not stored, retry shortly')
    }
  })

  // A page of an hour's totals; when more keys follow, Link names the next page (keyset: it starts
  // after this page's last key). Identical GETs share one query and one serialization (sharedReads:
  // never the answer of a query that began before the GET arrived), so a crowd polling the current
  // hour costs a query per flush-like round, not one each.
  const pages = sharedReads()
  app.get('/flows', { schema: schemas.listFlows }, async (request, reply) => {
    const { hour, limit, after_src_app: src = '', after_dest_app: dest = '', after_vpc_id: vpc = '' } = request.query
    const { json, next } = await pages(JSON.stringify([hour, limit, src, dest, vpc]), async () => {
      const { rows } = await pg.query(prepared(pg, sql.page, [hour, src, dest, vpc, limit + 1]))
      let next
      if (rows.length > limit) {
        rows.length = limit
        const last = rows.at(-1)
        next = new URLSearchParams({
          hour,
          limit,
          after_src_app: last.src_app,
          after_dest_app: last.dest_app,
          after_vpc_id: last.vpc_id
        })
      }
      return { json: reply.serialize(rows), next }
    })
    if (next) reply.header('link', `</flows?${next}>; rel="next"`)
    return reply.type('application/json; charset=utf-8').send(json)
  })
}
