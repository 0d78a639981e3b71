// JSON schemas of the menu routes: request validation, OpenAPI, and the response shapes tests check.
import { errorResponses, notModifiedResponse } from '@suite/kit'

const INT4_MAX = 2147483647

export const params = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'integer', minimum: 1, maximum: INT4_MAX, description: 'restaurant id' } }
}

// A dish as the original client reads it. Price is a JSON number (dollars), ingredients one string.
export const dish = {
  type: 'object',
  additionalProperties: false,
  required: ['dishType', 'subType', 'dish', 'price', 'ingredients'],
  properties: {
    dishType: { type: 'string', minLength: 1, maxLength: 100 },
    subType: { type: 'string', minLength: 1, maxLength: 100 },
    dish: { type: 'string', minLength: 1, maxLength: 200 },
    price: { type: 'number', minimum: 0, maximum: 1000000 },
    ingredients: { type: 'string', maxLength: 2000 }
  }
}

const link = { type: 'string', format: 'uri', pattern: '^https?://', maxLength: 2048 }

// `version` is not listed: fast-json-stringify leaves it out of the answer (it is for the cache).
export const menuDoc = {
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
  response: { 200: menuDoc, 304: notModifiedResponse, ...errorResponses }
}

// Either a non-empty dishes array or a link, not both (oneOf would give vague errors, so the
// route checks "both/neither" itself and names the field).
export const putMenu = {
  summary: 'Replace a restaurant\'s menu (201 when it had none)',
  tags: ['menus'],
  params,
  body: {
    type: 'object',
    additionalProperties: false,
    properties: {
      dishes: { type: 'array', minItems: 1, maxItems: 500, items: dish },
      link
    }
  },
  response: { 200: menuDoc, 201: menuDoc, ...errorResponses }
}
