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
 * `pretty` is decided by the main thread: a worker thread cannot see whether stdout is a TTY.
 */
export function createLogger ({ level, name, pretty: isPretty = process.stdout.isTTY, base = {} }) {
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
  // Whether a line of `value` would be written: asked before any child exists (a route's own level wins).
  #enabled (value) {
    if (this.#child) return true // its method is pino's own, a no-op below its level
    const level = this.#opts.level ?? this.#parent.level
    return (pino.levels.values[level] ?? Infinity) <= value // silent: no value, nothing written
  }

  get level () { return this.#child?.level ?? this.#opts.level ?? this.#parent.level }
  set level (level) { this.#logger.level = level }
  isLevelEnabled (level) { return this.#logger.isLevelEnabled(level) }
  bindings () { return this.#logger.bindings() }
  child (bindings, opts) { return this.#logger.child(bindings, opts) }
  fatal (...args) { if (this.#enabled(60)) this.#logger.fatal(...args) }
  error (...args) { if (this.#enabled(50)) this.#logger.error(...args) }
  warn (...args) { if (this.#enabled(40)) this.#logger.warn(...args) }
  info (...args) { if (this.#enabled(30)) this.#logger.info(...args) }
  debug (...args) { if (this.#enabled(20)) this.#logger.debug(...args) }
  trace (...args) { if (this.#enabled(10)) this.#logger.trace(...args) }
}
