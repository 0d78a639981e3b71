// The command line every service has: `serve` (default) and `migrate`, plus the service's own commands.
//   node services/<name>/src/cli.js [serve|migrate|<command>] [--options]
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'
import { loadConfig, ConfigError } from './config.js'
import { createLogger } from './logger.js'
import { createPool } from './pg.js'
import { migrate } from './migrate.js'
import { runWorkers } from './workers.js'

/**
 * @param {URL} serviceUrl  module whose default export is the service definition
 * @param {Record<string, { summary: string, options?: object, run: Function }>} commands  the service's own
 *   commands; `run(values, { service, config, log })` gets the parsed --options
 */
export async function runCli (serviceUrl, commands = {}) {
  const service = (await import(serviceUrl)).default
  const all = {
    serve: { summary: 'run the HTTP API on WORKERS threads', run: (v, ctx) => runWorkers(serviceUrl, ctx.config, ctx.log) },
    migrate: { summary: 'apply the SQL migrations (idempotent)', run: (v, ctx) => migrateCommand(service, ctx) },
    ...commands
  }
  const [name = 'serve', ...rest] = process.argv.slice(2)
  const command = all[name]
  if (!command) {
    console.error(`usage: ${service.name} <command>\n` + Object.entries(all).map(([n, c]) => `  ${n.padEnd(10)} ${c.summary}`).join('\n'))
    process.exit(2)
  }
  let config
  try {
    config = loadConfig(service.config)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    console.error(`${service.name}: ${err.message}`)
    process.exit(1)
  }
  const log = createLogger({ level: config.LOG_LEVEL, name: service.name })
  const { values } = parseArgs({ args: rest, options: command.options ?? {}, strict: true })
  await command.run(values, { service, config, log })
}

export async function migrateCommand (service, { config, log }) {
  const pool = createPool({ ...config, PG_POOL_MAX: 1 }, log, `${service.name}-migrate`)
  try {
    const applied = await migrate(pool, fileURLToPath(service.migrations), (m) => log.info(m))
    log.info(`${applied.length} migration(s) applied, schema up to date`)
  } finally {
    await pool.end()
  }
}
