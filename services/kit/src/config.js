// Configuration comes only from the environment, checked against a JSON schema once at start.
// A bad or missing value stops the process with one line naming the variable.
import { availableParallelism } from 'node:os'
import envSchema from 'env-schema'
import { redact, isSecretName } from './redact.js'

/** Settings every service has. Each service adds its own with `properties`. */
export const baseSchema = {
  type: 'object',
  required: ['DATABASE_URL'],
  properties: {
    HOST: { type: 'string', default: '0.0.0.0', description: 'address to listen on' },
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000, description: 'HTTP port (shared by all workers)' },
    WORKERS: { type: 'integer', minimum: 1, maximum: 256, default: availableParallelism(), description: 'worker threads serving the port; default: available CPUs' },
    LOG_LEVEL: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info', description: 'pino log level' },
    LOG_REQUESTS: { type: 'boolean', default: false, description: 'log every request (metrics already count them)' },
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://', description: 'PostgreSQL connection URL' },
    DATABASE_PASSWORD: { type: 'string', description: 'password for DATABASE_URL, kept out of the URL (Kubernetes: from a Secret)' },
    PG_POOL_MAX: { type: 'integer', minimum: 1, maximum: 1000, default: 10, description: 'PostgreSQL connections per worker' },
    PG_POOL_MIN: { type: 'integer', minimum: 0, maximum: 1000, description: 'connections per worker opened at start and kept open (at most PG_POOL_MAX); default: PG_POOL_MAX, a fixed-size pool' },
    PG_STATEMENT_TIMEOUT_MS: { type: 'integer', minimum: 0, default: 5000, description: 'server-side statement timeout' },
    PG_PREPARED_STATEMENTS: { type: 'boolean', default: true, description: 'prepare each query once per connection; turn off behind a pooler that shares sessions (PgBouncer transaction mode)' },
    PG_CONNECT_TIMEOUT_MS: { type: 'integer', minimum: 0, default: 2000, description: 'time to wait for a connection' },
    REDIS_URL: { type: 'string', pattern: '^rediss?://', description: 'Redis URL; unset: an in-process cache per worker' },
    REDIS_PASSWORD: { type: 'string', description: 'password for REDIS_URL, kept out of the URL (Kubernetes: from a Secret)' },
    CACHE_ENABLED: { type: 'boolean', default: true, description: 'false: every request goes to PostgreSQL (benchmarks of the database path)' },
    CACHE_TTL_SECONDS: { type: 'integer', minimum: 1, default: 300, description: 'time to live of cached responses' },
    CACHE_TTL_JITTER: { type: 'number', minimum: 0, maximum: 1, default: 0.1, description: 'random extra TTL, as a fraction, so keys do not expire together' },
    CACHE_TIMEOUT_MS: { type: 'integer', minimum: 1, default: 250, description: 'a cache call slower than this counts as an error and the request goes to PostgreSQL' },
    SHUTDOWN_DELAY_MS: { type: 'integer', minimum: 0, default: 0, description: 'after SIGTERM, keep serving (not ready, Connection: close) this long before closing the port' },
    SHUTDOWN_GRACE_MS: { type: 'integer', minimum: 100, default: 25000, description: 'after SIGTERM, the longest wait for in-flight requests before a forced exit' },
    MAX_EVENT_LOOP_DELAY_MS: { type: 'integer', minimum: 0, default: 1000, description: 'load shedding: answer 503 above this event-loop delay (0: off)' },
    MAX_EVENT_LOOP_UTILIZATION: { type: 'number', minimum: 0, maximum: 1, default: 0.98, description: 'load shedding: answer 503 above this event-loop utilization (0: off)' },
    READY_REQUIRES_CACHE: { type: 'boolean', default: false, description: 'make /readyz fail while Redis is down (default: serve from PostgreSQL)' }
  }
}

/**
 * @param {object} [extra] more JSON-schema properties (and `required`) of one service
 * @param {object} [env] defaults to process.env
 */
export function loadConfig (extra = {}, env = process.env) {
  const schema = {
    ...baseSchema,
    required: [...baseSchema.required, ...(extra.required ?? [])],
    properties: { ...baseSchema.properties, ...extra.properties }
  }
  try {
    return envSchema({ schema, data: env, dotenv: false })
  } catch (err) {
    throw new ConfigError(describe(err.errors?.[0], env) ?? err.message)
  }
}

export class ConfigError extends Error {}

function describe (e, env) {
  if (!e) return
  if (e.keyword === 'required') return `config: ${e.params.missingProperty} is required but not set`
  const name = e.instancePath.replace(/^\//, '')
  // The value helps, but never a secret in it: a password setting is not shown, a URL's userinfo is masked.
  return `config: ${name} ${e.message}${isSecretName(name) ? '' : ` (got ${redact(JSON.stringify(env[name]))})`}`
}
