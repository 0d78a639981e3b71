// JSON Schemas of the profile routes: they validate input (400 naming the field) and decide what
// is serialized — `version` is never in a body, it travels as the ETag.
import { errorResponses, errorResponse, notModifiedResponse } from '@suite/kit'

// price_range is an integer 1–4, the number of "$" signs ("$" … "$$$$").
const fields = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  address: { type: 'string', maxLength: 500 },
  phone: { type: 'string', maxLength: 50 },
  picture: { type: 'string', format: 'uri', maxLength: 2000 },
  cuisine: { type: 'string', maxLength: 100 },
  price_range: { type: 'integer', minimum: 1, maximum: 4, description: 'number of "$": 1 = "$" … 4 = "$$$$"' },
  stars: { type: 'number', minimum: 0, maximum: 5, description: 'stored to one decimal' },
  quality: { type: 'integer', minimum: 0, maximum: 100 },
  delivery: { type: 'integer', minimum: 0, maximum: 100 },
  accuracy: { type: 'integer', minimum: 0, maximum: 100 }
}
const names = Object.keys(fields)

export const restaurant = {
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
export const compatItem = {
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

const params = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'integer', minimum: 1, maximum: 2147483647 } }
}
const ifMatch = {
  type: 'object',
  properties: { 'if-match': { type: 'string', description: 'the ETag of the version this write replaces; 412 when it is not current' } }
}
const full = { type: 'object', required: names, additionalProperties: false, properties: fields }
const partial = { type: 'object', minProperties: 1, additionalProperties: false, properties: fields }
const tags = ['restaurants']

export const create = {
  tags, summary: 'create a restaurant (201, Location, ETag)', body: full,
  response: { 201: restaurant, ...errorResponses }
}
export const read = {
  tags, summary: 'a restaurant profile (ETag; If-None-Match → 304)', params,
  response: { 200: restaurant, 304: notModifiedResponse, ...errorResponses }
}
export const replace = {
  tags, summary: 'replace a restaurant (every field)', params, headers: ifMatch, body: full,
  response: { 200: restaurant, 412: errorResponse, ...errorResponses }
}
export const patch = {
  tags, summary: 'change some fields of a restaurant (at least one)', params, headers: ifMatch, body: partial,
  response: { 200: restaurant, 412: errorResponse, ...errorResponses }
}
export const remove = {
  tags, summary: 'delete a restaurant (204)', params, headers: ifMatch,
  response: { 204: { type: 'null' }, 412: errorResponse, ...errorResponses }
}
export const compat = {
  tags, summary: 'the original client\'s profile: [profile], or [] when unknown', params,
  response: { 200: { type: 'array', maxItems: 1, items: compatItem }, 304: notModifiedResponse, ...errorResponses }
}
