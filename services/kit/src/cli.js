// The command line every service has: `serve` (default) and `migrate`, plus the service's own commands.
//   node services/<name>/src/cli.js [serve|migrate|<command>] [--options]   (--help: every command, with examples)
import { availableParallelism } from 'node:os'
import { relative } from 'node:path'
import { loadConfig } from './config.js'
import { createLogger, prettyLogs } from './logger.js'
import { Worker } from 'node:worker_threads'
import { once } from 'node:events'
import { setTimeout } from 'node:timers/promises'
import { createPool, isUnavailable } from './pg.js'
import { migrate, MigrationError } from './migrate.js'
import { runCommand, usageText, UsageError, UserError, wholeNumber, numberIn } from './args.js'
import { LOAD_DEFAULTS } from './etl/load.js'

const HEAP_MB = 128 // generate and load threads
const YOUNG_MB = 24 // the image's --max-semi-space-size=4 (services/Dockerfile) wins over it there: 12
// The data commands' thread entries: files a Worker runs (with a capped heap), not imports.
const THREADS = {
  generate: new URL('./etl/generate-worker.js', import.meta.url),
  load: new URL('./etl/load-worker.js', import.meta.url),
  seed: new URL('./etl/seed-worker.js', import.meta.url)
}
// migrate's lock waits: --wait, but at least this (a concurrent migrate that is about to finish
// must not fail a `--wait 0` run such as load's).
const MIN_LOCK_WAIT_S = 5
// What only serve needs (Fastify, the cache, the metrics, the tracing SDK) is imported when it
// runs: the other commands do not carry it, and a data load keeps within its 128 MB (bench:etl).
const runWorkers = async (...args) => (await import('./workers.js')).runWorkers(...args)

/**
 * @param {object} service  the service definition (src/service.js's default export)
 * @param {Record<string, { summary: string, options?: object, examples?: string[], config?: false, run: Function }>} commands
 *   the service's own commands; `run(values, { service, config, log })` gets the parsed --options
 *   (node:util parseArgs options, each with a `help` line and a `value` name for --help);
 *   `config: false` for a command that needs no settings (no DATABASE_URL, say)
 */
export async function runCli (service, commands = {}) {
  const prog = `node ${relative(process.cwd(), process.argv[1]) || process.argv[1]}`
  const all = {
    serve: { summary: 'run the HTTP API on WORKERS threads (settings from the environment)', run: (v, ctx) => runWorkers(service, ctx.config, ctx.log) },
    migrate: {
      summary: 'apply the SQL migrations (idempotent, advisory-locked)',
      options: { wait: { type: 'string', value: 'SECONDS', default: '0', help: `while PostgreSQL is unreachable, retry this long; also the longest wait for each lock (at least ${MIN_LOCK_WAIT_S})` } },
      examples: [`${prog} migrate --wait 30`],
      run: (v, ctx) => migrateCommand(service, ctx, wholeNumber(v, 'wait'))
    },
    ...commands
  }
  const top = {
    usage: `${prog} [command] [options]`,
    summary: `The ${service.name} service. Settings come from the environment (DATABASE_URL, REDIS_URL, PORT, WORKERS…: services/README.md, Configuration); a bad one stops it with one line naming it.`,
    more: 'commands (serve when none is given):\n' + Object.entries(all).map(([n, c]) => `  ${n.padEnd(10)} ${c.summary}`).join('\n') +
      `\n\n${prog} <command> --help: that command's options.`,
    examples: [`DATABASE_URL=postgres://localhost/suite ${prog} serve`, `DATABASE_URL=postgres://localhost/suite ${prog} migrate`, ...Object.values(commands).flatMap((c) => c.examples ?? []).slice(0, 3)]
  }
  const args = process.argv.slice(2)
  if (['--help', '-h', 'help'].includes(args[0])) return void process.stdout.write(usageText(top))
  // No command, or options first: serve's.
  const [name, ...rest] = args.length && !args[0].startsWith('-') ? args : ['serve', ...args]
  const command = Object.hasOwn(all, name) ? all[name] : null
  if (!command) return runCommand(service.name, top, () => { throw new UsageError(`unknown command "${name}"`) }, [])
  // args.js's one error path: a UsageError is a line, the usage and exit 2; a UserError (a bad
  // setting is a ConfigError) a line and exit 1.
  const spec = { usage: `${prog} ${name} [options]`, summary: command.summary, options: command.options, examples: command.examples }
  return runCommand(`${service.name} ${name}`, spec, async (values) => {
    const config = command.config === false ? null : loadConfig(service.config)
    const log = createLogger({ level: config?.LOG_LEVEL ?? 'info', name: service.name, pretty: prettyLogs(config?.LOG_FORMAT ?? 'auto') })
    await command.run(values, { service, config, log })
  }, rest)
}

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

/** A command that failed for a reason it can say in one line (a refused load, a migration that failed): exit code 1. */
class CommandError extends UserError {}

/**
 * Applies the migrations. `waitSeconds`: while PostgreSQL is unreachable, retry this long (a pod
 * that starts with its database, as in a fresh `helm install`, migrates as soon as it answers);
 * and the longest wait for each lock (the advisory lock another pod's migrate holds, a table a
 * migration changes), at least MIN_LOCK_WAIT_S. The service's statement timeout does not apply.
 * A failure is a CommandError: one line, exit 1.
 */
async function migrateCommand (service, { config, log }, waitSeconds = 0) {
  // No request timeouts: a migration, or the wait for another pod's migration lock, may be long.
  const pool = createPool({ ...config, PG_POOL_MAX: 1, PG_STATEMENT_TIMEOUT_MS: 0, PG_QUERY_TIMEOUT_MS: 0 }, log, `${service.name}-migrate`)
  try {
    const deadline = Date.now() + waitSeconds * 1000
    for (let said = false; ; said = true) {
      try {
        await pool.query('SELECT 1')
        break
      } catch (err) {
        // Not a server still starting: a refused password, a certificate that does not verify.
        if (!isUnavailable(err)) throw new CommandError(`cannot connect to PostgreSQL: ${err.message}`)
        if (Date.now() >= deadline) throw new CommandError(`PostgreSQL unreachable${waitSeconds ? ` after ${waitSeconds} s (--wait)` : ''}: ${err.message}`)
        if (!said) log.info({ err: err.message }, `waiting up to ${waitSeconds} s for PostgreSQL`)
        await setTimeout(1000)
      }
    }
    const lockTimeoutMs = Math.max(waitSeconds, MIN_LOCK_WAIT_S) * 1000
    const applied = await migrate(pool, service, { log: (m) => log.info(m), lockTimeoutMs })
    log.info(`${applied.length} migration(s) applied, schema up to date`)
  } catch (err) {
    if (err instanceof MigrationError || err.severity !== undefined || isUnavailable(err)) throw new CommandError(err.message)
    throw err
  } finally {
    await pool.end()
  }
}

/**
 * The `generate` and `load` commands of a service with a data set, whose `etlModule` exports
 * `generate({ out, [count]: n, seed })` and `load({ db, dir, rejectsFile, progress })`; with
 * `seed: true` also the `seed` command, for an etlModule that exports
 * `seed({ connect, [count]: n, seed, streams, progress })` (the generator straight into PostgreSQL).
 *   count: the name of the size option (`products`, `menus`…); files: what generate writes (for --help);
 *   table: the table whose rows mean "the data set is there" (for --if-empty)
 */
export function dataCommands ({ etlModule, cachePrefix, count, defaultCount, files, table, seed = false }) {
  return {
    generate: generateCommand({ etlModule, count, defaultCount, files }),
    load: loadCommand({ etlModule, cachePrefix, table }),
    ...(seed && { seed: seedCommand({ etlModule, cachePrefix, count, defaultCount, table }) })
  }
}

// The service a data module belongs to (services/<name>/etl/index.js), for the examples.
const etlName = (etlModule) => /services\/([^/]+)\/etl\//.exec(String(etlModule))?.[1] ?? '<name>'

// Options load and seed share: a Job started with its database waits for it, and a seed Job run
// again (an upgrade re-creates it) leaves the data that is there alone.
const replaceOptions = (table) => ({
  wait: { type: 'string', value: 'SECONDS', default: '0', help: 'while PostgreSQL is unreachable, retry this long; also the longest wait for each lock' },
  'if-empty': { type: 'boolean', default: false, help: `only when the ${table} table is empty: a data set that is there is left alone` },
  'swap-wait': { type: 'string', value: 'SECONDS', default: String(LOAD_DEFAULTS.swapWaitSeconds), help: 'how long the swap keeps trying to take its locks (refused after)' }
})

function generateCommand ({ etlModule, count, defaultCount, files }) {
  return {
    summary: `write ${files}, deterministic for a seed`,
    config: false,
    options: {
      out: { type: 'string', value: 'DIR', help: 'folder to write the files into (required)' },
      [count]: { type: 'string', value: 'N', default: String(defaultCount), help: `how many ${count}` },
      seed: { type: 'string', value: 'N', default: '1', help: 'random seed: the same seed writes the same files' }
    },
    examples: [`node services/<name>/src/cli.js generate --out /tmp/data --${count} 1000`.replace('<name>', etlName(etlModule))],
    async run (values, { log }) {
      if (!values.out) throw new UsageError('--out DIR is required')
      const manifest = await inCappedThread('generate', {
        etlModule: String(etlModule),
        options: { out: values.out, [count]: wholeNumber(values, count), seed: wholeNumber(values, 'seed') }
      })
      for (const [file, f] of Object.entries(manifest.files)) {
        const planted = Object.values(f.rejects).reduce((a, b) => a + b, 0)
        log.info(`${file}: ${f.rows} rows, ${planted} of them planted for the loader to reject`)
      }
    }
  }
}

/**
 * Runs THREADS[kind] in a worker thread with a capped heap; resolves to its result (etl/thread.js).
 * Generating or parsing gigabytes makes garbage fast, and without a cap V8 lets the heap grow far
 * past what the work needs: with it, memory stays flat whatever the data size (or the thread fails,
 * loudly). A failure the thread can say in a sentence (a refused load) becomes a CommandError.
 */
async function inCappedThread (kind, workerData) {
  const worker = new Worker(THREADS[kind], {
    workerData,
    resourceLimits: { maxOldGenerationSizeMb: HEAP_MB, maxYoungGenerationSizeMb: YOUNG_MB }
  })
  let message = {}
  worker.on('message', (m) => { message = m })
  let crash = null
  worker.on('error', (err) => { crash = err })
  const [code] = await once(worker, 'exit')
  if (message.failed) {
    const { message: text, stack, sentence } = message.failed
    throw sentence ? new CommandError(text) : Object.assign(new Error(text), { stack })
  }
  if (crash?.code === 'ERR_WORKER_OUT_OF_MEMORY') throw new CommandError(`out of memory: the ${kind} thread's heap is capped at ${HEAP_MB} MB`)
  if (crash) throw crash
  if (code !== 0) throw new Error(`the ${kind} thread failed (worker exit ${code})`)
  return message.result
}

/**
 * The `seed` command: migrate, generate the data set straight into PostgreSQL over --streams
 * connections (no files: a 10M-row set needs no scratch volume), then clear the cached answers.
 */
function seedCommand ({ etlModule, cachePrefix, count, defaultCount, table }) {
  return {
    summary: 'generate the data straight into PostgreSQL (binary COPY, atomic swap), then clear the cache',
    options: {
      [count]: { type: 'string', value: 'N', default: String(defaultCount), help: `how many ${count}` },
      seed: { type: 'string', value: 'N', default: '1', help: 'random seed: the same seed makes the same rows' },
      streams: { type: 'string', value: 'K', default: String(availableParallelism()), help: 'COPY connections at once (default: one per CPU)' },
      ...replaceOptions(table)
    },
    examples: [`DATABASE_URL=postgres://localhost/suite node services/${etlName(etlModule)}/src/cli.js seed --${count} 100000`],
    async run (values, ctx) {
      const options = { [count]: wholeNumber(values, count), seed: wholeNumber(values, 'seed'), streams: wholeNumber(values, 'streams', { min: 1 }), swapWaitSeconds: wholeNumber(values, 'swap-wait') }
      await replaceData(ctx, { kind: 'seed', etlModule, cachePrefix, table, values, data: { options } })
    }
  }
}

/**
 * The `load` command: migrate, run the etlModule's `load`, then clear the cached answers under
 * `cachePrefix`. A load that is not a plausible replacement (see loadTables) is refused: one line,
 * exit 1, the live tables and the cache untouched.
 */
function loadCommand ({ etlModule, cachePrefix, table }) {
  const d = LOAD_DEFAULTS
  return {
    summary: 'load the CSVs of --dir into PostgreSQL (COPY, atomic swap), then clear the cache; a load that is not a plausible replacement is refused (exit 1, nothing changed)',
    options: {
      dir: { type: 'string', value: 'DIR', help: 'folder of the CSV files (required)' },
      rejects: { type: 'string', value: 'FILE', help: 'where the rejected rows go, with line and reason (default: DIR/rejects.csv)' },
      ...replaceOptions(table),
      'min-rows': { type: 'string', value: 'N', default: String(d.minRows), help: 'refuse the load when a file loads fewer rows' },
      'max-reject-ratio': { type: 'string', value: 'SHARE', default: String(d.maxRejectRatio), help: 'refuse the load when a file rejects more of the rows it read (and more than a few)' },
      'max-record-length': { type: 'string', value: 'CHARS', default: String(d.maxRecord), help: 'a longer CSV record is refused' }
    },
    examples: [`DATABASE_URL=postgres://localhost/suite node services/${etlName(etlModule)}/src/cli.js load --dir /tmp/data`],
    async run (values, ctx) {
      const { dir, rejects } = values
      if (!dir) throw new UsageError('--dir DIR is required')
      const limits = {
        minRows: wholeNumber(values, 'min-rows'),
        maxRejectRatio: numberIn(values, 'max-reject-ratio', { min: 0, max: 1 }),
        maxRecord: wholeNumber(values, 'max-record-length', { min: 1 }),
        swapWaitSeconds: wholeNumber(values, 'swap-wait')
      }
      await replaceData(ctx, { kind: 'load', etlModule, cachePrefix, table, values, data: { dir, rejectsFile: rejects ?? `${dir}/rejects.csv`, limits } })
    }
  }
}

/**
 * What load and seed share: migrate, run THREADS[kind] (the etlModule's load or seed) in a capped
 * thread with the database settings and `data`, then clear the cached answers under `cachePrefix`,
 * whose data was just replaced.
 */
async function replaceData (ctx, { kind, etlModule, cachePrefix, table, values, data }) {
  await migrateCommand(ctx.service, ctx, wholeNumber(values, 'wait'))
  if (values['if-empty'] && await holdsRows(ctx, table)) {
    ctx.log.info(`${table} already holds data: left as it is (--if-empty)`)
    return
  }
  await inCappedThread(kind, {
    etlModule: String(etlModule),
    databaseUrl: ctx.config.DATABASE_URL,
    databasePassword: ctx.config.DATABASE_PASSWORD,
    applicationName: `${ctx.service.name}-${kind}`,
    progress: process.stderr.isTTY ? true : 'lines',
    ...data
  })
  await clearCache(ctx, cachePrefix)
}

async function holdsRows ({ service, config, log }, table) {
  const pool = createPool({ ...config, PG_POOL_MAX: 1, PG_POOL_MIN: 0 }, log, `${service.name}-check`)
  try {
    const { rows } = await pool.query(`SELECT EXISTS (SELECT 1 FROM ${table}) AS any`)
    return rows[0].any
  } finally {
    await pool.end()
  }
}

// After new data is swapped in, the cached answers under `prefix` are old: delete them.
async function clearCache (ctx, prefix) {
  const [{ createCache }, { createMetrics }] = await Promise.all([import('./cache/index.js'), import('./metrics.js')])
  const cache = createCache({ config: ctx.config, metrics: createMetrics(), log: ctx.log })
  try {
    await cache.connected()
    ctx.log.info(`${await cache.deleteByPrefix(prefix)} cached answers cleared`)
  } catch (err) {
    ctx.log.warn({ err: err.message }, 'could not clear the cache: cached answers expire within CACHE_TTL_SECONDS')
  } finally {
    await cache.close()
  }
}
