// @suite/kit: everything a service needs except its routes, SQL and schemas. Importing it loads no
// HTTP framework: a service's schemas and its data commands take what they need from here.
export { loadConfig, baseSchema, COMPUTED_DEFAULTS } from './config/config.js'
export { redact } from './config/redact.js'
export { createMetrics, DURATION_BUCKETS, promClient } from './telemetry/metrics.js'
export { linkedSpan, childSpan, requestContext } from './telemetry/tracing.js'
export { queryDocument, prepared, withClient } from './data/pg.js'
export { isUnavailable, connectionOptions, connectionLost, primaryMoving } from './data/connection.js'
export { sharedReads, batchedRows } from './data/coalescing.js'
export { migrate } from './data/migrate.js'
export { createCache } from './cache/index.js'
export { errorResponses, errorResponse, errorSchema, httpError, notModifiedResponse } from './http/error-schemas.js'
export { text, httpUrl, id, INT4_MAX } from './http/validation.js'
export { preconditions, ifMatchHeader, ifNoneMatchHeader } from './http/conditional.js'
