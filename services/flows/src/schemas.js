// JSON schemas of the flows routes: request validation, OpenAPI, and the response shapes the tests
// check every answer against.
import { errorResponses, errorResponse } from '@suite/kit'

export const MAX_BYTES = Number.MAX_SAFE_INTEGER // 2^53-1: the largest integer JSON parsing keeps exact
export const MAX_HOUR = 2147483647 // the hour column is int4
const name = (description) => ({
  type: 'string',
  minLength: 1,
  maxLength: 200,
  pattern: '^[^\\u0000]*$', // PostgreSQL text cannot hold NUL: rejected here, not by a failed flush
  description
})
const bytes = (description) => ({ type: 'integer', minimum: 0, maximum: MAX_BYTES, description })
const hour = { type: 'integer', minimum: 0, maximum: MAX_HOUR, description: 'hour bucket (non-negative integer)' }

export const flow = {
  type: 'object',
  required: ['src_app', 'dest_app', 'vpc_id', 'bytes_tx', 'bytes_rx', 'hour'],
  properties: {
    src_app: name('application that sent the traffic'),
    dest_app: name('application that received it'),
    vpc_id: name('VPC of the flow'),
    bytes_tx: bytes('bytes sent'),
    bytes_rx: bytes('bytes received'),
    hour
  }
}


/** POST /flows; the limits come from the configuration. */
export function post ({ maxBatch, bodyLimit }) {
  return {
    summary: 'Add a batch of flow records to the hourly totals; answered once committed',
    description: `The whole batch is validated first: one bad element is a 400 naming its index and field ` +
      `(\`body/3/bytes_tx must be >= 0\`) and nothing of the batch is stored. At most ${maxBatch} records ` +
      `(FLOWS_MAX_BATCH) and ${bodyLimit} bytes of body (FLOWS_BODY_LIMIT, else 413). 200 means durable: ` +
      `the records are committed. 503 with Retry-After: nothing of the batch was stored, send it again. ` +
      `504 with Retry-After: the database connection was lost while the batch was committing, so whether it ` +
      `was stored is unknown; send it again with the same Idempotency-Key, which makes it count once ` +
      `(without a key a resend may count it twice). Clients that retry should always send an Idempotency-Key.`,
    tags: ['flows'],
    headers: {
      type: 'object',
      properties: {
        'idempotency-key': { type: 'string', minLength: 1, maxLength: 200, description: 'unique per batch (e.g. a UUID); a batch sent again with the same key is not counted again' }
      }
    },
    body: { type: 'array', minItems: 1, maxItems: maxBatch, items: flow },
    response: {
      200: {
        type: 'object',
        additionalProperties: false,
        required: ['stored'],
        properties: {
          stored: { type: 'integer', description: 'records of this batch now in the totals' },
          replayed: { type: 'boolean', description: 'true: this Idempotency-Key was already committed; nothing counted again' }
        }
      },
      ...errorResponses,
      413: errorResponse,
      415: errorResponse,
      504: errorResponse
    }
  }
}

export const list = {
  summary: 'Totals per (src_app, dest_app, vpc_id) for one hour, in that order',
  tags: ['flows'],
  querystring: {
    type: 'object',
    required: ['hour'],
    properties: { hour }
  },
  response: {
    200: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['src_app', 'dest_app', 'vpc_id', 'bytes_tx', 'bytes_rx', 'hour'],
        properties: {
          src_app: { type: 'string' },
          dest_app: { type: 'string' },
          vpc_id: { type: 'string' },
          bytes_tx: { type: 'integer', minimum: 0 },
          bytes_rx: { type: 'integer', minimum: 0 },
          hour: { type: 'integer', minimum: 0 }
        }
      }
    },
    ...errorResponses
  }
}
