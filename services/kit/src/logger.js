// pino: JSON lines for machines, pretty lines when a person watches a terminal. Every line goes
// through redact(): a connection URL in an error message never puts its password in the log.
import pino from 'pino'
import pretty from 'pino-pretty'
import { redact } from './redact.js'

const redactError = (err) => {
  const e = pino.stdSerializers.err(err)
  if (typeof e !== 'object' || e === null) return typeof e === 'string' ? redact(e) : e
  return { ...e, message: redact(e.message), stack: redact(e.stack) }
}

/**
 * @param {{ level: string, name: string, pretty?: boolean, base?: object }} opts
 * `pretty` is decided by the main thread (prettyLogs): a worker thread cannot see whether stdout is a TTY.
 */
export function createLogger ({ level, name, pretty: isPretty = prettyLogs('auto'), base = {} }) {
  const options = {
    level,
    name,
    base: { pid: process.pid, ...base },
    serializers: { err: redactError },
    hooks: {
      // The message, and any string field of the merged object (`{ err: err.message }`).
      logMethod (args, method) {
        method.apply(this, args.map((a) => typeof a === 'string' ? redact(a) : a && typeof a === 'object' && !(a instanceof Error) ? redactFields(a) : a))
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
 * its bindings at once, and with request logging off most requests log nothing: that was about 1 µs
 * and several objects per cached read.
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

  get #logger () { return (this.#child ??= this.#parent.child(this.#bindings, this.#opts)) }

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
