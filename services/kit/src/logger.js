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
