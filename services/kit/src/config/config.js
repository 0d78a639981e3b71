// Configuration comes only from the environment, checked against a JSON schema once at start.
// A bad or missing value stops the process with one line naming the variable.
import { totalmem } from 'node:os'
import { getHeapStatistics } from 'node:v8'
import envSchema from 'env-schema'
import { redact, isSecretName } from './redact.js'
import { cpuBudget } from './cpus.js'
import { TRACING_SETTINGS } from './tracing-settings.js'
import { UserError } from '../cli/args.js'

// Shed load before memory runs out: 90% of this thread's V8 heap limit, and of the container's memory
// limit (cgroup) when there is one (process.constrainedMemory() is then below the machine's memory).
const heapDefault = Math.floor(getHeapStatistics().heap_size_limit * 0.9)
const limit = process.constrainedMemory?.() ?? 0
const rssDefault = limit > 0 && limit < totalmem() ? Math.floor(limit * 0.9) : 0
// The near cache: a sixteenth of that limit, split among the workers, at most 64 MiB a worker (a pod of
// the chart's 384Mi and one worker: 24 MiB); off without a limit (a developer's machine, the tests).
const nearDefault = (workers) => limit > 0 && limit < totalmem()
  ? Math.min(64 * 2 ** 20, Math.floor(limit / 16 / workers))
  : 0

/** The settings whose default is computed at start, from the machine or the container's limits. */
export const COMPUTED_DEFAULTS = ['WORKERS', 'MAX_HEAP_USED_BYTES', 'MAX_RSS_BYTES', 'CACHE_NEAR_MAX_BYTES']

/** Settings every service has. Each service adds its own with `properties`. */
export const baseSchema = {
  type: 'object',
  required: ['DATABASE_URL'],
  properties: {
    HOST: { type: 'string', default: '0.0.0.0', description: 'address to listen on (npm start: 127.0.0.1 unless set)' },
    PORT: {
      type: 'integer',
      minimum: 0,
      maximum: 65535,
      default: 3000,
      description: 'HTTP port (shared by all workers)'
    },
    WORKERS: {
      type: 'integer',
      minimum: 1,
      maximum: 256,
      default: cpuBudget(),
      description: 'worker threads serving the port (1: the one instance runs on the main thread); default: the ' +
        'CPUs the process may use — its cgroup CPU quota (a container\'s CPU limit) rounded down, else the CPUs it ' +
        'may run on; at least 1'
    },
    LOG_LEVEL: {
      type: 'string',
      enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info',
      description: 'pino log level'
    },
    LOG_FORMAT: {
      type: 'string',
      enum: ['auto', 'json', 'pretty'],
      default: 'auto',
      description: 'log lines as JSON (one object a line, for collectors) or pretty (pino-pretty: coloured, one ' +
        'readable line each); auto: pretty when standard output is a terminal, JSON otherwise'
    },
    LOG_REQUESTS: { type: 'boolean', default: false, description: 'log every request (metrics already count them)' },
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://', description: 'PostgreSQL connection URL' },
    DATABASE_PASSWORD: {
      type: 'string',
      description: 'password for DATABASE_URL, kept out of the URL (Kubernetes: from a Secret)'
    },
    PG_POOL_MAX: {
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      default: 10,
      description: 'PostgreSQL connections per worker'
    },
    PG_POOL_MIN: {
      type: 'integer',
      minimum: 0,
      maximum: 1000,
      description: 'connections per worker opened at start and kept open (at most PG_POOL_MAX); default: ' +
        'PG_POOL_MAX, a fixed-size pool'
    },
    PG_STATEMENT_TIMEOUT_MS: {
      type: 'integer',
      minimum: 0,
      default: 1000,
      description: 'server-side statement timeout: PostgreSQL cancels a longer statement (503); 0: none'
    },
    PG_QUERY_TIMEOUT_MS: {
      type: 'integer',
      minimum: 0,
      default: 1500,
      description: 'client-side: the longest a query (or a transaction: flows\' group commit) waits for PostgreSQL ' +
        'in all, its wait for a connection included; past it the query fails (503) and its connection is dropped — ' +
        'the bound when the server is frozen or cut off and its own timeout never fires; keep it above ' +
        'PG_STATEMENT_TIMEOUT_MS and PG_CONNECT_TIMEOUT_MS; 0: none'
    },
    PG_PREPARED_STATEMENTS: {
      type: 'boolean',
      default: true,
      description: 'prepare each query once per connection; turn off behind a pooler that shares sessions ' +
        '(PgBouncer transaction mode)'
    },
    PG_CONNECT_TIMEOUT_MS: {
      type: 'integer',
      minimum: 0,
      default: 1000,
      description: 'the longest a query waits for a pool connection, a new connection\'s connect included (503 after)'
    },
    PG_PRIMARY_WAIT_MS: {
      type: 'integer',
      minimum: 0,
      maximum: 60000,
      default: 0,
      description: 'the longest a query waits for the primary while it moves (a failover, a switchover, a restart: ' +
        'connections refused or unanswered, the server starting or shutting down, or a standby) before it fails ' +
        '(503); PG_QUERY_TIMEOUT_MS counts from when it is back. Held requests retry as one connect every 250 ms ' +
        'per worker. For a database whose primary moves (CloudNativePG, a managed failover); 0: fail at once'
    },
    REDIS_URL: {
      type: 'string',
      pattern: '^rediss?://',
      description: 'Redis URL; unset: an in-process cache per worker'
    },
    REDIS_PASSWORD: {
      type: 'string',
      description: 'password for REDIS_URL, kept out of the URL (Kubernetes: from a Secret)'
    },
    CACHE_ENABLED: {
      type: 'boolean',
      default: true,
      description: 'false: every request goes to PostgreSQL (benchmarks of the database path)'
    },
    CACHE_TTL_SECONDS: { type: 'integer', minimum: 1, default: 300, description: 'time to live of cached responses' },
    CACHE_TTL_JITTER: {
      type: 'number',
      minimum: 0,
      maximum: 1,
      default: 0.1,
      description: 'random extra TTL, as a fraction, so keys do not expire together'
    },
    CACHE_TIMEOUT_MS: {
      type: 'integer',
      minimum: 1,
      default: 250,
      description: 'a cache call slower than this counts as an error and the request goes to PostgreSQL'
    },
    CACHE_BREAKER_FAILURES: {
      type: 'integer',
      minimum: 1,
      default: 3,
      description: 'circuit breaker: after this many Redis failures in a row (timeouts, errors) Redis is bypassed, ' +
        'every request goes to PostgreSQL at once'
    },
    CACHE_BREAKER_OPEN_MS: {
      type: 'integer',
      minimum: 100,
      default: 1000,
      description: 'circuit breaker: while bypassed, a PING this often checks whether Redis is back; once it ' +
        'answers, reads wait this long plus 1 s more (invalidations do not) so that missed invalidations are ' +
        'replayed first'
    },
    CACHE_MAX_ENTRY_BYTES: {
      type: 'integer',
      minimum: 0,
      default: 262144,
      description: 'answers larger than this (UTF-8 bytes) are served but not cached'
    },
    CACHE_NEAR_MAX_BYTES: {
      type: 'integer',
      minimum: 0,
      description: 'with Redis: the most memory the near cache of one worker holds (Redis answers kept in process, ' +
        'invalidated by Redis client-side caching, entries counted at their bytes plus 2 a key character plus 200, ' +
        'the least recently used out first); a write answers once every other near cache has dropped its key, or ' +
        'after 300 ms when one is stalled (which then serves no hits): never stale after an acknowledged write, ' +
        'whatever the other replicas\' setting; 0: every read goes to Redis; default: a sixteenth of the container ' +
        'memory limit split among the workers, at most 64 MiB a worker, 0 without a limit'
    },
    CACHE_MEMORY_MAX_BYTES: {
      type: 'integer',
      minimum: 0,
      default: 67108864,
      description: 'without Redis: the most memory the in-process cache of one worker holds (entries counted at ' +
        'their bytes plus 2 a key character plus 200); the least recently used go first'
    },
    CACHE_MEMORY_TTL_MS: {
      type: 'integer',
      minimum: 0,
      default: 1000,
      description: 'without Redis: the longest an answer is kept in process, from the moment it was read from ' +
        'PostgreSQL; another replica cannot invalidate it, so this bounds how stale a read can be after a write ' +
        'there'
    },
    START_WAIT_MS: {
      type: 'integer',
      minimum: 0,
      default: 20000,
      description: 'at start, the longest a worker waits for PostgreSQL and Redis to answer before it takes ' +
        'requests; past it, it serves without them (cached answers, 503s)'
    },
    SHUTDOWN_DELAY_MS: {
      type: 'integer',
      minimum: 0,
      default: 0,
      description: 'after SIGTERM, keep serving (not ready, Connection: close) this long before closing the port'
    },
    SHUTDOWN_IDLE_MS: {
      type: 'integer',
      minimum: 0,
      maximum: 5000,
      default: 1000,
      description: 'after the delay, close a keep-alive connection once idle this long, and the port once no new ' +
        'connection has come for this long (5 s at most); 0: at once, where clients never stop sending (the dev loop)'
    },
    SHUTDOWN_GRACE_MS: {
      type: 'integer',
      minimum: 100,
      default: 25000,
      description: 'after SIGTERM, the longest wait for in-flight requests before a forced exit'
    },
    MAX_EVENT_LOOP_DELAY_MS: {
      type: 'integer',
      minimum: 0,
      default: 1000,
      description: 'load shedding: answer 503 above this event-loop delay (0: off)'
    },
    MAX_EVENT_LOOP_UTILIZATION: {
      type: 'number',
      minimum: 0,
      maximum: 1,
      default: 0.98,
      description: 'load shedding: answer 503 above this event-loop utilization (0: off)'
    },
    MAX_HEAP_USED_BYTES: {
      type: 'integer',
      minimum: 0,
      default: heapDefault,
      description: 'load shedding: answer 503 above this V8 heap use of a worker; default: 90% of its heap limit ' +
        '(0: off)'
    },
    MAX_RSS_BYTES: {
      type: 'integer',
      minimum: 0,
      default: rssDefault,
      description: 'load shedding: answer 503 above this resident memory of the process; default: 90% of the ' +
        'container memory limit, off without one (0: off)'
    },
    HTTP_HEADERS_TIMEOUT_MS: {
      type: 'integer',
      minimum: 1,
      default: 100000,
      description: 'a request whose headers are not all in after this long is answered 408 and its connection ' +
        'closed; Node counts a new connection\'s first request from the connect, and a proxy keeps connections it ' +
        'opened but did not use yet for up to its idle timeout (Traefik 90 s): shorter, they get a 408 just as the ' +
        'proxy sends on them'
    },
    HTTP_REQUEST_TIMEOUT_MS: {
      type: 'integer',
      minimum: 1,
      default: 120000,
      description: 'a request not wholly received (headers and body) after this long is answered 408 and its ' +
        'connection closed; at least HTTP_HEADERS_TIMEOUT_MS'
    },
    HTTP_KEEP_ALIVE_TIMEOUT_MS: {
      type: 'integer',
      minimum: 1,
      default: 95000,
      description: 'an idle keep-alive connection is closed after this long: longer than the idle timeout of the ' +
        'proxies in front (Traefik 90 s, ingress-nginx 60 s), so that they close first and never send on a ' +
        'connection being closed'
    },
    READY_REQUIRES_DATABASE: {
      type: 'boolean',
      default: false,
      description: 'make /readyz fail while PostgreSQL does not answer this pod\'s probe (default: stay ready, ' +
        'serve cached answers and 503 the rest)'
    },
    READY_REQUIRES_CACHE: {
      type: 'boolean',
      default: false,
      description: 'make /readyz fail while Redis is down (default: serve from PostgreSQL)'
    },
    ...TRACING_SETTINGS
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
  let config
  try {
    config = envSchema({ schema, data: env, dotenv: false })
  } catch (err) {
    throw new ConfigError(describe(err.errors?.[0], env) ?? err.message)
  }
  config.CACHE_NEAR_MAX_BYTES ??= nearDefault(config.WORKERS)
  // Node refuses a server whose headers timeout is longer than its request timeout.
  if (config.HTTP_HEADERS_TIMEOUT_MS > config.HTTP_REQUEST_TIMEOUT_MS) {
    const got = `${config.HTTP_HEADERS_TIMEOUT_MS} > ${config.HTTP_REQUEST_TIMEOUT_MS}`
    throw new ConfigError(`config: HTTP_HEADERS_TIMEOUT_MS must be at most HTTP_REQUEST_TIMEOUT_MS (got ${got})`)
  }
  return config
}

/** A bad or missing setting: one line naming it (args.js prints a UserError's line and exits 1). */
export class ConfigError extends UserError {}

function describe (e, env) {
  if (!e) return
  if (e.keyword === 'required') return `config: ${e.params.missingProperty} is required but not set`
  const name = e.instancePath.replace(/^\//, '')
  // The value helps, but never a secret in it: a password setting is not shown, a URL's userinfo is masked.
  return `config: ${name} ${e.message}${isSecretName(name) ? '' : ` (got ${redact(JSON.stringify(env[name]))})`}`
}
