// The command line every service has: `serve` (default) and `migrate`, plus its data commands when it
// has a data set (data-commands.js) and any commands of its own.
//   node services/<name>/src/cli.js [serve|migrate|<command>] [--options]   (--help: every command)
import { relative } from 'node:path'
import { loadConfig } from '../config/config.js'
import { createLogger, prettyLogs } from '../telemetry/logger.js'
import { runCommand, usageText, UsageError, wholeNumber } from './args.js'
import { MIN_LOCK_WAIT_S, migrateCommand } from './migrate-command.js'
import { dataCommands } from './data-commands.js'

// What only serve needs (Fastify, the cache, the metrics, the tracing SDK) is imported when it
// runs: the other commands do not carry it, and a data load keeps within its 128 MB (bench:etl).
const runWorkers = async (...args) => (await import('../process/workers.js')).runWorkers(...args)
const EXAMPLE_URL = 'DATABASE_URL=postgres://localhost/suite'

/**
 * @param {object} service  the service definition (src/service.js's default export); with `data` (its
 *   entry in services/list.js) and `etl`, it has the data commands
 * @param {Record<string, { summary: string, options?: object, examples?: string[], config?: false,
 *   run: Function }>} [commands]  commands of its own; `run(values, { service, config, log })` gets the
 *   parsed --options (node:util parseArgs options, each with a `help` line and a `value` name for
 *   --help); `config: false` for a command that needs no settings (no DATABASE_URL, say)
 */
export async function runCli (service, commands = {}) {
  const prog = `node ${relative(process.cwd(), process.argv[1]) || process.argv[1]}`
  const own = { ...(service.data && dataCommands(service)), ...commands }
  const all = {
    serve: {
      summary: 'run the HTTP API on WORKERS threads (settings from the environment)',
      run: (v, ctx) => runWorkers(service, ctx.config, ctx.log)
    },
    migrate: {
      summary: 'apply the SQL migrations (idempotent, advisory-locked)',
      options: {
        wait: {
          type: 'string',
          value: 'SECONDS',
          default: '0',
          help: 'while PostgreSQL is unreachable, retry this long; also the longest wait for each lock ' +
            `(at least ${MIN_LOCK_WAIT_S})`
        }
      },
      examples: [`${prog} migrate --wait 30`],
      run: (v, ctx) => migrateCommand(service, ctx, wholeNumber(v, 'wait'))
    },
    ...own
  }
  const list = Object.entries(all).map(([n, c]) => `  ${n.padEnd(10)} ${c.summary}`).join('\n')
  const top = {
    usage: `${prog} [command] [options]`,
    summary: `The ${service.name} service. Settings come from the environment (DATABASE_URL, REDIS_URL, PORT, ` +
      'WORKERS…: services/README.md, Configuration); a bad one stops it with one line naming it.',
    more: `commands (serve when none is given):\n${list}\n\n${prog} <command> --help: that command's options.`,
    examples: [
      `${EXAMPLE_URL} ${prog} serve`,
      `${EXAMPLE_URL} ${prog} migrate`,
      ...Object.values(own).flatMap((c) => c.examples ?? []).slice(0, 3)
    ]
  }
  const args = process.argv.slice(2)
  if (['--help', '-h', 'help'].includes(args[0])) return void process.stdout.write(usageText(top))
  // No command, or options first: serve's.
  const [name, ...rest] = args.length && !args[0].startsWith('-') ? args : ['serve', ...args]
  const command = Object.hasOwn(all, name) ? all[name] : null
  if (!command) return runCommand(service.name, top, () => { throw new UsageError(`unknown command "${name}"`) }, [])
  // args.js's one error path: a UsageError is a line, the usage and exit 2; a UserError (a bad
  // setting is a ConfigError) a line and exit 1.
  const spec = { usage: `${prog} ${name} [options]`, ...pick(command, 'summary', 'options', 'examples') }
  return runCommand(`${service.name} ${name}`, spec, async (values) => {
    const config = command.config === false ? null : loadConfig(service.config)
    const pretty = prettyLogs(config?.LOG_FORMAT ?? 'auto')
    const log = createLogger({ level: config?.LOG_LEVEL ?? 'info', name: service.name, pretty })
    await command.run(values, { service, config, log })
  }, rest)
}

const pick = (o, ...keys) => Object.fromEntries(keys.map((k) => [k, o[k]]))

/**
 * `serve`, for a service in a process that hosts several (npm start's launcher): its settings from
 * `env` instead of the process's, no signal handling (the host stops it with the returned close()),
 * and a failure to start thrown (a ConfigError for a bad setting) instead of exiting.
 */
export async function hostService (service, env, { exit } = {}) {
  const config = loadConfig(service.config, env)
  const log = createLogger({ level: config.LOG_LEVEL, name: service.name, pretty: prettyLogs(config.LOG_FORMAT) })
  return runWorkers(service, config, log, { hosted: true, exit })
}
