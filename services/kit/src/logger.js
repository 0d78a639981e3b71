// pino: JSON lines for machines, pretty lines when a person watches a terminal.
import pino from 'pino'
import pretty from 'pino-pretty'

/**
 * @param {{ level: string, name: string, pretty?: boolean, base?: object }} opts
 * `pretty` is decided by the main thread: a worker thread cannot see whether stdout is a TTY.
 */
export function createLogger ({ level, name, pretty: isPretty = process.stdout.isTTY, base = {} }) {
  const options = { level, name, base: { pid: process.pid, ...base } }
  return isPretty
    ? pino(options, pretty({ colorize: true, sync: true, ignore: 'pid,hostname' }))
    : pino(options)
}
