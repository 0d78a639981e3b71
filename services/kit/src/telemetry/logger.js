// pino: JSON lines for machines, pretty lines when a person watches a terminal. Every line goes
// through redact(): a connection URL in an error message never puts its password in the log.
import pino from 'pino'
import pretty from 'pino-pretty'
import { redact } from '../config/redact.js'

const redactError = (err) => {
  const e = pino.stdSerializers.err(err)
  if (typeof e !== 'object' || e === null) return typeof e === 'string' ? redact(e) : e
  return { ...e, message: redact(e.message), stack: redact(e.stack) }
}

// On a request's own logger once its trace ids are bound (RequestLogger.addBindings): the mixin then
// adds nothing.
const IDS_BOUND = Symbol('trace ids bound')

/**
 * @param {{ level: string, name: string, pretty?: boolean, base?: object, mixin?: Function }} opts
 * `pretty` is decided by the main thread (prettyLogs): a worker thread cannot see whether stdout is a TTY.
 * `mixin()`: fields for a line written anywhere (tracing's request and trace ids), unless its logger
 * is a request's, which has them bound.
 */
export function createLogger ({ level, name, pretty: isPretty = prettyLogs('auto'), base = {}, mixin }) {
  const options = {
    level,
    name,
    base: { pid: process.pid, ...base },
    ...(mixin && { mixin: (obj, lvl, logger) => (logger[IDS_BOUND] ? {} : mixin()) }),
    serializers: { err: redactError },
    hooks: {
      // The message, and any string field of the merged object (`{ err: err.message }`).
      logMethod (args, method) {
        method.apply(this, args.map((a) => typeof a === 'string'
          ? redact(a)
          : a && typeof a === 'object' && !(a instanceof Error) ? redactFields(a) : a))
      }
    }
  }
  return isPretty
    ? pino(options, pretty({ colorize: true, sync: true, ignore: 'pid,hostname' }))
    : pino(options)
}

/** Whether LOG_FORMAT asks for pretty lines: 'pretty', or 'auto' on a terminal. */
export const prettyLogs = (format) => format === 'pretty' || (format === 'auto' && Boolean(process.stdout.isTTY))

function redactFields (o) {
  const out = {}
  for (const [k, v] of Object.entries(o)) out[k] = typeof v === 'string' ? redact(v) : v
  return out
}

/**
 * Fastify's childLoggerFactory: a request's logger, which becomes a pino child (the request id bound)
 * only when the request logs a line. Fastify makes one for every request, pino's child() serializes
 * its bindings at once, and with request logging off most requests log nothing: making the child anyway
 * cost CPU and garbage on every cached read (docs/decisions/0007-request-metrics-in-plain-numbers.md).
 */
export function lazyRequestLogger (logger, bindings, opts) {
  return new RequestLogger(logger, bindings, opts)
}

class RequestLogger {
  #parent
  #bindings
  #opts
  #child = null
  constructor (parent, bindings, opts) {
    this.#parent = parent
    this.#bindings = bindings
    this.#opts = opts
  }

  get #logger () {
    if (!this.#child) {
      this.#child = this.#parent.child(this.#bindings, this.#opts)
      if (this.#bindings.trace_id) this.#child[IDS_BOUND] = true
    }
    return this.#child
  }

  /** More fields for every line of this request (its trace and span ids), bound before or after the first line. */
  addBindings (bindings) {
    if (this.#child) {
      this.#child.setBindings(bindings)
      if (bindings.trace_id) this.#child[IDS_BOUND] = true
    } else {
      this.#bindings = { ...this.#bindings, ...bindings }
    }
  }

  // The level the child has or would have: a route's own level wins over the parent's.
  get level () { return this.#child?.level ?? this.#opts.level ?? this.#parent.level }
  set level (level) { this.#logger.level = level }
  // Answered from the level, without a child (silent, or an unknown name: nothing is written).
  isLevelEnabled (name) { return (pino.levels.values[this.level] ?? Infinity) <= pino.levels.values[name] }
  bindings () { return this.#logger.bindings() }
  child (bindings, opts) { return this.#logger.child(bindings, opts) }
  fatal (...args) { if (this.isLevelEnabled('fatal')) this.#logger.fatal(...args) }
  error (...args) { if (this.isLevelEnabled('error')) this.#logger.error(...args) }
  warn (...args) { if (this.isLevelEnabled('warn')) this.#logger.warn(...args) }
  info (...args) { if (this.isLevelEnabled('info')) this.#logger.info(...args) }
  debug (...args) { if (this.isLevelEnabled('debug')) this.#logger.debug(...args) }
  trace (...args) { if (this.isLevelEnabled('trace')) this.#logger.trace(...args) }
}
