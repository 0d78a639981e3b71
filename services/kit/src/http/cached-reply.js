// reply.sendCached(key, load, { versioned }): cache-aside for a whole response.
import fp from 'fastify-plugin'
import { noneMatchHolds } from './conditional.js'

const JSON_TYPE = 'application/json; charset=utf-8'

/**
 * Sends the cached JSON text of `key`, or calls `load()` for the document, serializes it once by the
 * route's response schema and caches that text.
 * A document that changes has a version (a counter its table bumps on every write, see
 * cache.invalidate): pass `{ versioned: true }` and make `load()` resolve to `{ doc, version }`; the
 * answer then carries `ETag: "<version>"`, and a GET whose If-None-Match names it gets a 304.
 * Resolves to true once sent, or to false when `load()` found nothing (the route then answers 404).
 */
export const cachedReply = fp(async function cachedReply (app, { cache }) {
  app.decorateReply('sendCached', async function (key, load, { versioned = false } = {}) {
    const { value: json, version } = await cache.wrapEntry(key, async () => {
      const loaded = await load()
      const doc = versioned ? loaded?.doc ?? null : loaded
      const value = doc === null ? null : this.serialize(doc)
      return versioned ? { value, version: loaded?.version ?? 0 } : value
    })
    if (json === null) return false
    if (versioned) {
      const etag = `"${version}"`
      this.header('etag', etag)
      if (noneMatchHolds(this.request.headers['if-none-match'], etag)) {
        this.code(304).send()
        return true
      }
    }
    this.type(JSON_TYPE).send(json)
    return true
  })
}, { name: 'cached-reply' })
