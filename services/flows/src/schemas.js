// JSON schemas of the flows routes: request validation, OpenAPI, and the response shapes the tests
// check every answer against.
// Exported: one schema per route, named by its operation (getMenu, postFlows…: every service's
// schemas.js alike); components stay private.
import { errorResponses, errorResponse, text, INT4_MAX } from '@suite/kit'

const MAX_BYTES = Number.MAX_SAFE_INTEGER // 2^53-1: the largest integer JSON parsing keeps exact
const MAX_HOUR = INT4_MAX // the hour column is int4
const MAX_PAGE = 10_000 // keys per GET at most
// No NUL, no unpaired surrogate (kit: text): two keys that differ only there would be stored as one.
const name = (description) => text({ minLength: 1, maxLength: 200, description })
const bytes = (description) => ({ type: 'integer', minimum: 0, maximum: MAX_BYTES, description })
const hour = { type: 'integer', minimum: 0, maximum: MAX_HOUR, description: 'hour bucket (non-negative integer)' }

const flow = {
  type: 'object',
  additionalProperties: false,
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
export function postFlows ({ maxBatch, bodyLimit }) {
  return {
    summary: 'Add a batch of flow records to the hourly totals; answered once committed',
    description: 'The whole batch is validated first: one bad element is a 400 naming its index and field ' +
      `(\`body/3/bytes_tx must be >= 0\`) and nothing of the batch is stored. At most ${maxBatch} records ` +
      `(FLOWS_MAX_BATCH) and ${bodyLimit} bytes of body (FLOWS_BODY_LIMIT, else 413). 200 means durable: ` +
      'the records are committed. 503 with Retry-After: nothing of the batch was stored, send it again. ' +
      '504 with Retry-After: the database connection was lost while the batch was committing, so whether it ' +
      'was stored is unknown; send it again with the same Idempotency-Key, which makes it count once ' +
      '(without a key a resend may count it twice). Clients that retry should always send an Idempotency-Key. ' +
      'An optional Idempotency-Key header makes a retry of a committed batch count once; the same key with a ' +
      'different batch is a 422 and stores nothing. 422 also when a total would pass 2^63-1.',
    tags: ['flows'],
    headers: {
      type: 'object',
      properties: {
        'idempotency-key': {
          type: 'string',
          minLength: 1,
          maxLength: 200,
          pattern: '^[!-~]+$',
          description: 'unique per batch (e.g. a UUID; visible ASCII): the same batch sent again with it is not ' +
            'counted again, another batch with it is a 422'
        }
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
          replayed: {
            type: 'boolean',
            description: 'true: this Idempotency-Key was already committed; nothing counted again'
          }
        }
      },
      ...errorResponses,
      413: errorResponse,
      415: errorResponse,
      422: errorResponse,
      504: errorResponse
    }
  }
}

// Totals are decimal strings, as the seed's own example answered: exact past 2^53, where a JSON
// number loses digits in most parsers.
const total = (description) => ({ type: 'string', pattern: '^(0|[1-9][0-9]*)$', description })
// The keyset cursor: the page starts after the key (after_src_app, after_dest_app, after_vpc_id);
// a part left out is '' (before every name). The next page's URL is in the Link header.
const after = (field) => text({
  maxLength: 200,
  description: `keyset cursor: the key after which this page starts (its ${field}); ` +
    'the Link header of the previous page has it'
})

export const listFlows = {
  summary: 'Totals per (src_app, dest_app, vpc_id) for one hour, in that order, a page at a time',
  description: `The seed's shape: a bare array, totals as decimal strings (exact past 2^53). At most \`limit\` ` +
    `keys (default 1000, at most ${MAX_PAGE}); when the hour has more, ` +
    '`Link: <…>; rel="next"` is the next page\'s URL (keyset: the same cost at any depth).',
  tags: ['flows'],
  querystring: {
    type: 'object',
    required: ['hour'],
    properties: {
      hour,
      limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: 1000, description: 'keys per page at most' },
      after_src_app: after('src_app'),
      after_dest_app: after('dest_app'),
      after_vpc_id: after('vpc_id')
    }
  },
  response: {
    200: {
      type: 'array',
      maxItems: MAX_PAGE,
      headers: {
        link: {
          type: 'string',
          description: 'present when there is a next page: `</flows?hour=…&after_src_app=…>; rel="next"`'
        }
      },
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['src_app', 'dest_app', 'vpc_id', 'bytes_tx', 'bytes_rx', 'hour'],
        properties: {
          src_app: { type: 'string' },
          dest_app: { type: 'string' },
          vpc_id: { type: 'string' },
          bytes_tx: total('bytes sent, in total (a decimal string: exact past 2^53)'),
          bytes_rx: total('bytes received, in total (a decimal string: exact past 2^53)'),
          hour: { type: 'integer', minimum: 0 }
        }
      }
    },
    400: errorResponse,
    500: errorResponse,
    503: errorResponse
  }
}
