// The error contract's shapes, for a service's schemas and routes. Plain data: importing them loads
// neither Fastify nor anything else.

/** The body of every 4xx and 5xx answer, whatever produced it. */
export const errorSchema = {
  $id: 'error',
  type: 'object',
  description: 'every 4xx and 5xx answer, whatever produced it',
  required: ['statusCode', 'error', 'message'],
  additionalProperties: false,
  properties: {
    statusCode: { type: 'integer', minimum: 400, maximum: 599, description: 'the HTTP status again' },
    error: { type: 'string', description: 'its reason phrase (Not Found, Bad Request…)' },
    message: { type: 'string', description: 'what was wrong, naming the field (body/3/hour is required)' }
  }
}

const err = { $ref: 'error#' }
/** Response schemas of the error statuses a service route answers besides those the kit adds itself. */
export const errorResponses = { 400: err, 404: err, 500: err, 503: err }
/** The response schema of one more error status a route answers (412, 422…). */
export const errorResponse = err

/** The response schema of a 304 to a conditional GET (see reply.sendCached's `versioned`). */
export const notModifiedResponse = { type: 'null', description: 'not modified: If-None-Match names the current ETag' }

/** An error that the error handler turns into `{statusCode, error, message}`. */
export function httpError (statusCode, message) {
  return Object.assign(new Error(message), { statusCode })
}
