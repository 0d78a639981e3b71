import { queryDocument, httpError } from '@suite/kit'
import * as sql from './sql.js'
import * as schemas from './schemas.js'
import { CACHE_PREFIX } from './service.js'

/** The Atelier products API: each answer is one query, then cached text (reply.sendCached, in the kit). */
export default async function routes (app) {
  const { pg } = app

  app.get('/products', { schema: schemas.listProducts }, async (request, reply) => {
    const { page, count, after } = request.query
    await (after === undefined
      ? reply.sendCached(`${CACHE_PREFIX}page:${page}:${count}`, () =>
          queryDocument(pg, sql.productPage, [(page - 1) * count, page * count]))
      : reply.sendCached(`${CACHE_PREFIX}after:${after}:${count}`, () =>
          queryDocument(pg, sql.productsAfter, [after, count])))
    return reply
  })

  // The three routes of one product differ only by query; an unknown product is a 404 on each.
  const byProduct = (keyspace, query) => async (request, reply) => {
    const id = request.params.id
    const found = await reply.sendCached(`${CACHE_PREFIX}${keyspace}:${id}`, () => queryDocument(pg, query, [id]))
    if (!found) throw httpError(404, `product ${id} not found`)
    return reply
  }
  app.get('/products/:id', { schema: schemas.getProduct }, byProduct('product', sql.product))
  app.get('/products/:id/styles', { schema: schemas.getStyles }, byProduct('styles', sql.styles))
  app.get('/products/:id/related', { schema: schemas.getRelated }, byProduct('related', sql.related))
}
