// JSON schemas of the menu routes: request validation, OpenAPI, and the response shapes tests check.
// Exported: one schema per route, named by its operation (getMenu, postFlows…: every service's
// schemas.js alike); components stay private.
import {
  errorResponses, errorResponse, notModifiedResponse, text, httpUrl, id, ifMatchHeader, ifNoneMatchHeader
} from '@suite/kit'

const params = { type: 'object', required: ['id'], properties: { id: id('restaurant id') } }

// A dish as the original client reads it. Price is a JSON number (dollars), ingredients one string.
const dish = {
  type: 'object',
  additionalProperties: false,
  required: ['dishType', 'subType', 'dish', 'price', 'ingredients'],
  properties: {
    dishType: text({ minLength: 1, maxLength: 100 }),
    subType: text({ minLength: 1, maxLength: 100 }),
    dish: text({ minLength: 1, maxLength: 200 }),
    price: { type: 'number', minimum: 0, maximum: 1000000 },
    ingredients: text({ maxLength: 2000 })
  }
}

const link = httpUrl(2048, { description: 'the restaurant\'s own menu: an absolute http(s) URL' })

// `version` is not listed: fast-json-stringify leaves it out of the answer (it is for the cache).
const menuDoc = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'dishes', 'link'],
  properties: {
    id: { type: 'integer' },
    dishes: { type: 'array', items: dish },
    link: { anyOf: [link, { type: 'null' }] }
  }
}

export const getMenu = {
  summary: 'A restaurant\'s menu: its dishes, or a link (then dishes is []); ETag, If-None-Match → 304',
  tags: ['menus'],
  params,
  headers: { type: 'object', properties: { 'if-none-match': ifNoneMatchHeader } },
  response: { 200: menuDoc, 304: notModifiedResponse, ...errorResponses }
}

// Either a non-empty dishes array or a link, not both: exactly one property. The route says which
// rule was broken, naming the field, before ajv's vaguer `must NOT have more than 1 properties`.
export const putMenu = {
  summary: 'Replace a restaurant\'s menu (201 when it had none)',
  description: 'If-Match: replace only the menu whose ETag is listed (`*`: only an existing menu), never create one; ' +
    'If-None-Match: `*` creates only, a list refuses those versions. A precondition that does not hold is a 412 ' +
    'and changes nothing.',
  tags: ['menus'],
  params,
  headers: { type: 'object', properties: { 'if-match': ifMatchHeader, 'if-none-match': ifNoneMatchHeader } },
  body: {
    type: 'object',
    additionalProperties: false,
    minProperties: 1,
    maxProperties: 1,
    properties: {
      dishes: { type: 'array', minItems: 1, maxItems: 500, items: dish },
      link
    }
  },
  response: { 200: menuDoc, 201: menuDoc, 412: errorResponse, ...errorResponses }
}
