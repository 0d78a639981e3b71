// JSON Schemas of the profile routes: they validate input (400 naming the field) and decide what
// is serialized — `version` is never in a body, it travels as the ETag.
// Exported: one schema per route, named by its operation (getMenu, postFlows…: every service's
// schemas.js alike); components stay private.
import {
  errorResponses, errorResponse, notModifiedResponse, text, httpUrl, id, ifMatchHeader, ifNoneMatchHeader
} from '@suite/kit'

// price_range is an integer 1–4, the number of "$" signs ("$" … "$$$$").
const fields = {
  name: text({ minLength: 1, maxLength: 200 }),
  address: text({ maxLength: 500 }),
  phone: text({ maxLength: 50 }),
  picture: httpUrl(2000, { description: 'an absolute http(s) URL' }),
  cuisine: text({ maxLength: 100 }),
  price_range: { type: 'integer', minimum: 1, maximum: 4, description: 'number of "$": 1 = "$" … 4 = "$$$$"' },
  stars: { type: 'number', minimum: 0, maximum: 5, description: 'stored to one decimal' },
  quality: { type: 'integer', minimum: 0, maximum: 100 },
  delivery: { type: 'integer', minimum: 0, maximum: 100 },
  accuracy: { type: 'integer', minimum: 0, maximum: 100 }
}
const names = Object.keys(fields)

const restaurant = {
  type: 'object',
  required: ['id', ...names, 'created_at', 'updated_at'],
  additionalProperties: false,
  properties: {
    id: { type: 'integer' },
    ...fields,
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' }
  }
}

// The original client's shape: `number` is the phone.
const compatItem = {
  type: 'object',
  required: ['id', 'name', 'address', 'number', 'picture', 'stars', 'quality', 'delivery', 'accuracy'],
  additionalProperties: false,
  properties: {
    id: { type: 'integer' },
    name: fields.name,
    address: fields.address,
    number: fields.phone,
    picture: fields.picture,
    stars: fields.stars,
    quality: fields.quality,
    delivery: fields.delivery,
    accuracy: fields.accuracy
  }
}

const params = { type: 'object', required: ['id'], properties: { id: id('restaurant id') } }
// RFC 9110 preconditions: If-Match on writes (412 unless the current ETag is listed), If-None-Match
// on reads (304) and on writes (`*`: 412 when it exists).
const conditions = { type: 'object', properties: { 'if-match': ifMatchHeader, 'if-none-match': ifNoneMatchHeader } }
const ifNoneMatch = { type: 'object', properties: { 'if-none-match': ifNoneMatchHeader } }
const full = { type: 'object', required: names, additionalProperties: false, properties: fields }
const partial = { type: 'object', minProperties: 1, additionalProperties: false, properties: fields }
const tags = ['restaurants']

export const createRestaurant = {
  tags, summary: 'create a restaurant (201, Location, ETag)', body: full,
  response: { 201: restaurant, ...errorResponses }
}
export const getRestaurant = {
  tags, summary: 'a restaurant profile (ETag; If-None-Match → 304)', params, headers: ifNoneMatch,
  response: { 200: restaurant, 304: notModifiedResponse, ...errorResponses }
}
export const replaceRestaurant = {
  tags, summary: 'replace a restaurant (every field)', params, headers: conditions, body: full,
  response: { 200: restaurant, 412: errorResponse, ...errorResponses }
}
export const patchRestaurant = {
  tags, summary: 'change some fields of a restaurant (at least one)', params, headers: conditions, body: partial,
  response: { 200: restaurant, 412: errorResponse, ...errorResponses }
}
export const deleteRestaurant = {
  tags, summary: 'delete a restaurant (204)', params, headers: conditions,
  response: { 204: { type: 'null' }, 412: errorResponse, ...errorResponses }
}
// The original client's route answers 200 [] for an unknown id, deleted or never created (its client
// reads data[0]): it has no 404.
export const getProfile = {
  tags,
  summary: 'the original client\'s profile: [profile], or [] when unknown',
  description: 'Kept for the original client: an id without a restaurant (never created, or deleted) is `200 []`, ' +
    'not a 404.',
  params,
  headers: ifNoneMatch,
  response: {
    200: {
      type: 'array',
      maxItems: 1,
      items: compatItem,
      description: '[the profile], or [] when no restaurant has this id (never created, or deleted)'
    },
    304: notModifiedResponse,
    400: errorResponse,
    500: errorResponse,
    503: errorResponse
  }
}
