// JSON schemas of the product routes: request validation, OpenAPI, and the response shapes the
// tests check every answer against.
// Exported: one schema per route, named by its operation (getMenu, postFlows…: every service's
// schemas.js alike); components stay private.
import { errorResponses, id, INT4_MAX } from '@suite/kit'

const price = { type: 'string', pattern: '^-?\\d+\\.\\d{2}$', examples: ['140.00'] }
const nullable = (schema) => ({ anyOf: [schema, { type: 'null' }] })

const params = { type: 'object', required: ['id'], properties: { id: id('product id') } }

const listItem = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'slogan', 'description', 'category', 'default_price'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    slogan: { type: 'string' },
    description: { type: 'string' },
    category: { type: 'string' },
    default_price: price
  }
}

export const listProducts = {
  summary: 'List products in id order, by page (like OFFSET, at constant cost) or after an id (keyset)',
  tags: ['products'],
  querystring: {
    type: 'object',
    properties: {
      page: { type: 'integer', minimum: 1, maximum: INT4_MAX, default: 1 },
      count: { type: 'integer', minimum: 1, maximum: 100, default: 5 },
      after: {
        type: 'integer',
        minimum: 0,
        maximum: INT4_MAX,
        description: 'keyset cursor: products with id > after (page is then ignored)'
      }
    }
  },
  response: { 200: { type: 'array', items: listItem }, ...errorResponses }
}

export const getProduct = {
  summary: 'One product with its features',
  tags: ['products'],
  params,
  response: {
    200: {
      type: 'object',
      additionalProperties: false,
      required: [
        'id', 'campus', 'name', 'slogan', 'description', 'category', 'default_price', 'created_at', 'updated_at',
        'features'
      ],
      properties: {
        ...listItem.properties,
        campus: { type: 'string' },
        created_at: { type: 'string', format: 'date-time' },
        updated_at: { type: 'string', format: 'date-time' },
        features: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['feature', 'value'],
            properties: { feature: { type: 'string' }, value: nullable({ type: 'string' }) }
          }
        }
      }
    },
    ...errorResponses
  }
}

const style = {
  type: 'object',
  additionalProperties: false,
  required: ['style_id', 'name', 'original_price', 'sale_price', 'default?', 'photos', 'skus'],
  properties: {
    style_id: { type: 'integer' },
    name: { type: 'string' },
    original_price: price,
    sale_price: nullable(price),
    'default?': { type: 'boolean' },
    photos: {
      type: 'array',
      minItems: 1,
      description: 'a style without photos has one photo whose urls are null',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['thumbnail_url', 'url'],
        properties: { thumbnail_url: nullable({ type: 'string' }), url: nullable({ type: 'string' }) }
      }
    },
    skus: {
      type: 'object',
      description: 'by SKU id; a style without SKUs has the single key "null" with null quantity and size',
      minProperties: 1,
      propertyNames: { pattern: '^(\\d+|null)$' },
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['quantity', 'size'],
        properties: { quantity: nullable({ type: 'integer' }), size: nullable({ type: 'string' }) }
      }
    }
  }
}

export const getStyles = {
  summary: 'The styles of a product, with photos and SKUs',
  tags: ['products'],
  params,
  response: {
    200: {
      type: 'object',
      additionalProperties: false,
      required: ['product_id', 'results'],
      properties: { product_id: { type: 'string', pattern: '^\\d+$' }, results: { type: 'array', items: style } }
    },
    ...errorResponses
  }
}

export const getRelated = {
  summary: 'Ids of related products',
  tags: ['products'],
  params,
  response: { 200: { type: 'array', items: { type: 'integer' } }, ...errorResponses }
}
