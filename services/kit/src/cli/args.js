// Command lines for every command of the repository (the services' cli.js, the load tests, the
// benchmarks): --help prints the usage with examples; a mistake — an unknown option, a missing or
// bad value — prints one line naming it, then the usage, and exits 2. Never a stack trace for what
// the user typed.
import { parseArgs } from 'node:util'

/** A mistake in the command line: one line, the usage, exit code 2. */
export class UsageError extends Error {}

/** A problem the user can fix (a missing tool, say): one line, exit code 1, no stack trace. */
export class UserError extends Error {}

/**
 * The usage text of a command.
 * @param {object} spec
 * @param {string} spec.usage     the synopsis, e.g. 'node loadtests/ladder.js [options]'
 * @param {string} [spec.summary] what it does, a paragraph
 * @param {Record<string, {type: 'string'|'boolean', value?: string, help: string, default?: *,
 *   multiple?: boolean}>} [spec.options]
 * @param {string[]} [spec.examples]
 * @param {string} [spec.more]    text after the options (commands, notes)
 */
export function usageText ({ usage, summary, options = {}, examples = [], more }) {
  const rows = Object.entries({
    ...options,
    help: { type: 'boolean', help: 'print this help and exit' }
  }).map(([name, o]) => {
    const flag = `--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`
    const def = o.default !== undefined && o.default !== false && !(Array.isArray(o.default) && !o.default.length)
      ? ` (default: ${o.default})`
      : ''
    return [flag, `${o.help ?? ''}${o.multiple ? ' (repeatable)' : ''}${def}`]
  })
  const width = Math.max(...rows.map(([f]) => f.length))
  const lines = [`usage: ${usage}`]
  if (summary) lines.push('', summary)
  if (more) lines.push('', more)
  lines.push('', 'options:', ...rows.map(([f, h]) => `  ${f.padEnd(width)}  ${h}`))
  if (examples.length) lines.push('', 'examples:', ...examples.map((e) => `  ${e}`))
  return lines.join('\n') + '\n'
}

/**
 * Parses `args` by `spec.options` (node:util parseArgs, strict). Returns the values, or null when
 * --help was asked for (the usage is then printed on stdout). Throws UsageError on a mistake.
 */
export function parseCommand (spec, args = process.argv.slice(2)) {
  const options = Object.fromEntries(Object.entries({ ...spec.options, help: { type: 'boolean', short: 'h' } })
    .map(([name, { type, default: def, multiple, short }]) => [name, {
      type,
      ...(def !== undefined && { default: def }),
      ...(multiple && { multiple }),
      ...(short && { short })
    }]))
  let values
  try {
    ({ values } = parseArgs({ args, options, strict: true, allowPositionals: false }))
  } catch (err) {
    if (err.code?.startsWith('ERR_PARSE_ARGS')) throw new UsageError(err.message.replace(/\s*\n\s*/g, ' '))
    throw err
  }
  if (values.help) {
    process.stdout.write(usageText(spec))
    return null
  }
  delete values.help
  return values
}

function usageExit (name, err, spec) {
  process.stderr.write(`${name}: ${err.message}\n\n${usageText(spec)}`)
  process.exit(2)
}

/**
 * A script's command line, synchronously: parsed, then checked by `check(values)` (whose result is
 * returned). --help prints the usage and exits 0; a UsageError prints "<name>: <message>" and the
 * usage on stderr and exits 2.
 */
export function commandLine (name, spec, check = (values) => values, args = process.argv.slice(2)) {
  try {
    const values = parseCommand(spec, args)
    if (values === null) process.exit(0)
    return check(values)
  } catch (err) {
    if (err instanceof UsageError) usageExit(name, err, spec)
    throw err
  }
}

/**
 * Runs a command: parse (--help: usage, exit 0), then `run(values)`. A UsageError — from parsing or
 * from run's own checks — prints "<name>: <message>" and the usage on stderr and exits 2; a
 * UserError prints its line and exits 1.
 */
export async function runCommand (name, spec, run, args = process.argv.slice(2)) {
  try {
    const values = parseCommand(spec, args)
    if (values === null) return
    await run(values)
  } catch (err) {
    if (err instanceof UsageError) usageExit(name, err, spec)
    if (err instanceof UserError) {
      process.stderr.write(`${name}: ${err.message}\n`)
      process.exit(1)
    }
    throw err
  }
}

// Checks of option values, each throwing a UsageError that names the option.

/** A whole number ≥ min. */
export function wholeNumber (values, name, { min = 0 } = {}) {
  const v = values[name]
  if (!/^\d+$/.test(String(v)) || Number(v) < min) {
    throw new UsageError(`--${name} must be a whole number${min ? ` ≥ ${min}` : ''} (got "${v}")`)
  }
  return Number(v)
}

/** A finite number in [min, max]. */
export function numberIn (values, name, { min = -Infinity, max = Infinity } = {}) {
  const v = values[name]
  const n = Number(v)
  if (String(v).trim() === '' || !Number.isFinite(n) || n < min || n > max) {
    const atLeast = Number.isFinite(min) ? ` ≥ ${min}` : ''
    const atMost = Number.isFinite(max) ? ` ≤ ${max}` : ''
    throw new UsageError(`--${name} must be a number${atLeast}${atMost} (got "${v}")`)
  }
  return n
}

/** A comma-separated list of whole numbers ≥ min. */
export function wholeNumbers (values, name, { min = 0 } = {}) {
  const v = String(values[name])
  const list = v.split(',').map((x) => x.trim())
  if (!list.every((x) => /^\d+$/.test(x) && Number(x) >= min)) {
    const atLeast = min ? ` ≥ ${min}` : ''
    throw new UsageError(`--${name} must be a comma-separated list of whole numbers${atLeast} (got "${v}")`)
  }
  return list.map(Number)
}

/** One of `allowed`. */
export function oneOf (values, name, allowed) {
  const v = values[name]
  if (!allowed.includes(v)) throw new UsageError(`--${name} must be one of ${allowed.join(', ')} (got "${v}")`)
  return v
}

/** A comma-separated list of some of `allowed`. */
export function someOf (values, name, allowed) {
  const list = String(values[name]).split(',').map((x) => x.trim())
  const bad = list.filter((x) => !allowed.includes(x))
  if (bad.length || !list.length) {
    throw new UsageError(`--${name} must be a comma-separated list of ${allowed.join(', ')} (got "${values[name]}")`)
  }
  return list
}

/** A repeatable NAME=VALUE option (an environment variable's name: capitals, digits, _) → { NAME: VALUE }. */
export function settings (values, name) {
  return Object.fromEntries((values[name] ?? []).map((kv) => {
    const i = kv.indexOf('=')
    if (!/^[A-Z][A-Z0-9_]*$/.test(kv.slice(0, i))) {
      throw new UsageError(`--${name} must be NAME=VALUE with NAME in capitals (got "${kv}")`)
    }
    return [kv.slice(0, i), kv.slice(i + 1)]
  }))
}

/** A duration such as 500ms, 30s, 2m, 1h, in seconds. */
export function duration (values, name) {
  const v = values[name]
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(String(v))
  if (!m) throw new UsageError(`--${name} must be a duration such as 30s or 2m (got "${v}")`)
  return Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2]]
}
