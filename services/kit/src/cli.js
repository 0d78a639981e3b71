// The command line every service has: `serve` (default) and `migrate`, plus the service's own commands.
//   node services/<name>/src/cli.js [serve|migrate|<command>] [--options]
import { parseArgs } from 'node:util'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { loadConfig, ConfigError } from './config.js'
import { createLogger } from './logger.js'
import { Worker } from 'node:worker_threads'
import { once } from 'node:events'
import { setTimeout } from 'node:timers/promises'
import { createPool, isUnavailable } from './pg.js'
import { createCache } from './cache.js'
import { createMetrics } from './metrics.js'
import { migrate, MigrationError } from './migrate.js'
import { runWorkers } from './workers.js'
import { LOAD_DEFAULTS } from './etl/load.js'

const HEAP_MB = 128 // generate and load threads
const YOUNG_MB = 24
// migrate's lock waits: --wait, but at least this (a concurrent migrate that is about to finish
// must not fail a `--wait 0` run such as load's).
const MIN_LOCK_WAIT_S = 5

/**
 * @param {URL} serviceUrl  module whose default export is the service definition
 * @param {Record<string, { summary: string, options?: object, config?: false, run: Function }>} commands
 *   the service's own commands; `run(values, { service, config, log })` gets the parsed --options;
 *   `config: false` for a command that needs no settings (no DATABASE_URL, say)
 */
export async function runCli (serviceUrl, commands = {}) {
  const service = (await import(serviceUrl)).default
  const all = {
    serve: { summary: 'run the HTTP API on WORKERS threads', run: (v, ctx) => runWorkers(serviceUrl, ctx.config, ctx.log, service.name) },
    migrate: {
      summary: `apply the SQL migrations (idempotent, advisory-locked) [--wait SECONDS for PostgreSQL to come up, and for each lock (at least ${MIN_LOCK_WAIT_S})]`,
      options: { wait: { type: 'string', default: '0' } },
      run: (v, ctx) => migrateCommand(service, ctx, wholeNumber(v, 'wait'))
    },
    ...commands
  }
  const [name = 'serve', ...rest] = process.argv.slice(2)
  const command = all[name]
  if (!command) {
    console.error(`usage: ${service.name} <command> [--options]\n` + Object.entries(all).map(([n, c]) => `  ${n.padEnd(10)} ${c.summary}`).join('\n'))
    process.exit(2)
  }
  let config
  try {
    config = command.config === false ? null : loadConfig(service.config)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    console.error(`${service.name}: ${err.message}`)
    process.exit(1)
  }
  const log = createLogger({ level: config?.LOG_LEVEL ?? 'info', name: service.name })
  try {
    const { values } = parseArgs({ args: rest, options: command.options ?? {}, strict: true })
    await command.run(values, { service, config, log })
  } catch (err) {
    if (err instanceof CommandError) {
      console.error(`${service.name} ${name}: ${err.message}`)
      process.exit(1)
    }
    if (!(err instanceof UsageError) && !err.code?.startsWith('ERR_PARSE_ARGS')) throw err
    console.error(`${service.name} ${name}: ${err.message}`)
    process.exit(2)
  }
}

/** A mistake in the command line: printed as one line, exit code 2. */
class UsageError extends Error {}

/** A command that failed for a reason it can say in one line (a refused load, a migration that failed): exit code 1. */
export class CommandError extends Error {}

function wholeNumber (values, name) {
  if (!/^\d+$/.test(values[name])) throw new UsageError(`--${name} must be a whole number (got "${values[name]}")`)
  return Number(values[name])
}

function ratio (values, name) {
  const v = Number(values[name])
  if (!/^\d*\.?\d+$/.test(values[name]) || v > 1) throw new UsageError(`--${name} must be a number from 0 to 1 (got "${values[name]}")`)
  return v
}

/**
 * Applies the migrations. `waitSeconds`: while PostgreSQL is unreachable, retry this long (a pod
 * that starts with its database, as in a fresh `helm install`, migrates as soon as it answers);
 * and the longest wait for each lock (the advisory lock another pod's migrate holds, a table a
 * migration changes), at least MIN_LOCK_WAIT_S. The service's statement timeout does not apply.
 * A failure is a CommandError: one line, exit 1.
 */
export async function migrateCommand (service, { config, log }, waitSeconds = 0) {
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
    const applied = await migrate(pool, fileURLToPath(service.migrations), (m) => log.info(m), { lockTimeoutMs })
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

// Options load and seed share: a Job started with its database waits for it, and a seed Job run
// again (an upgrade re-creates it) leaves the data that is there alone.
const replaceOptions = {
  wait: { type: 'string', default: '0' },
  'if-empty': { type: 'boolean', default: false },
  'swap-wait': { type: 'string', default: String(LOAD_DEFAULTS.swapWaitSeconds) }
}

function generateCommand ({ etlModule, count, defaultCount, files }) {
  return {
    summary: `write ${files} (deterministic for a seed): --out DIR [--${count} ${defaultCount}] [--seed 1]`,
    config: false,
    options: { out: { type: 'string' }, [count]: { type: 'string', default: String(defaultCount) }, seed: { type: 'string', default: '1' } },
    async run (values, { log }) {
      if (!values.out) throw new UsageError('--out DIR is required')
      const manifest = await inCappedThread('generate-worker.js', {
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
 * Runs etl/<file> in a worker thread with a capped heap; resolves to its result (etl/thread.js).
 * Generating or parsing gigabytes makes garbage fast, and without a cap V8 lets the heap grow far
 * past what the work needs: with it, memory stays flat whatever the data size (or the thread fails,
 * loudly). A failure the thread can say in a sentence (a refused load) becomes a CommandError.
 */
async function inCappedThread (file, workerData) {
  const worker = new Worker(new URL(`./etl/${file}`, import.meta.url), {
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
  if (crash?.code === 'ERR_WORKER_OUT_OF_MEMORY') throw new CommandError(`out of memory: the ${file.replace('-worker.js', '')} thread's heap is capped at ${HEAP_MB} MB`)
  if (crash) throw crash
  if (code !== 0) throw new Error(`${file} failed (worker exit ${code})`)
  return message.result
}

/**
 * The `seed` command: migrate, generate the data set straight into PostgreSQL over --streams
 * connections (no files: a 10M-row set needs no scratch volume), then clear the cached answers.
 */
function seedCommand ({ etlModule, cachePrefix, count, defaultCount, table }) {
  return {
    summary: `generate the data straight into PostgreSQL (binary COPY, atomic swap), then clear the cache: [--${count} ${defaultCount}] [--seed 1] [--streams CPUs] [--wait SECONDS for PostgreSQL and each lock] [--if-empty: only into an empty ${table}] [--swap-wait ${LOAD_DEFAULTS.swapWaitSeconds}]`,
    options: {
      [count]: { type: 'string', default: String(defaultCount) },
      seed: { type: 'string', default: '1' },
      streams: { type: 'string', default: String(availableParallelism()) },
      ...replaceOptions
    },
    async run (values, ctx) {
      const options = { [count]: wholeNumber(values, count), seed: wholeNumber(values, 'seed'), streams: wholeNumber(values, 'streams'), swapWaitSeconds: wholeNumber(values, 'swap-wait') }
      if (options.streams < 1) throw new UsageError('--streams must be at least 1')
      await replaceData(ctx, { worker: 'seed-worker.js', etlModule, cachePrefix, table, values, data: { options } })
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
    summary: `load the CSVs of --dir into PostgreSQL (COPY, atomic swap), then clear the cache [--rejects FILE] [--wait SECONDS for PostgreSQL and each lock] [--if-empty: only into an empty ${table}] [--min-rows ${d.minRows}] [--max-reject-ratio ${d.maxRejectRatio}] [--max-record-length ${d.maxRecord}] [--swap-wait ${d.swapWaitSeconds}]`,
    options: {
      dir: { type: 'string' },
      rejects: { type: 'string' },
      ...replaceOptions,
      'min-rows': { type: 'string', default: String(d.minRows) },
      'max-reject-ratio': { type: 'string', default: String(d.maxRejectRatio) },
      'max-record-length': { type: 'string', default: String(d.maxRecord) }
    },
    async run (values, ctx) {
      const { dir, rejects } = values
      if (!dir) throw new UsageError('--dir DIR is required')
      const limits = {
        minRows: wholeNumber(values, 'min-rows'),
        maxRejectRatio: ratio(values, 'max-reject-ratio'),
        maxRecord: wholeNumber(values, 'max-record-length'),
        swapWaitSeconds: wholeNumber(values, 'swap-wait')
      }
      if (limits.maxRecord < 1) throw new UsageError('--max-record-length must be at least 1')
      await replaceData(ctx, { worker: 'load-worker.js', etlModule, cachePrefix, table, values, data: { dir, rejectsFile: rejects ?? `${dir}/rejects.csv`, limits } })
    }
  }
}

/**
 * What load and seed share: migrate, run etl/<worker> (the etlModule's load or seed) in a capped
 * thread with the database settings and `data`, then clear the cached answers under `cachePrefix`,
 * whose data was just replaced.
 */
async function replaceData (ctx, { worker, etlModule, cachePrefix, table, values, data }) {
  await migrateCommand(ctx.service, ctx, wholeNumber(values, 'wait'))
  if (values['if-empty'] && await holdsRows(ctx, table)) {
    ctx.log.info(`${table} already holds data: left as it is (--if-empty)`)
    return
  }
  await inCappedThread(worker, {
    etlModule: String(etlModule),
    databaseUrl: ctx.config.DATABASE_URL,
    databasePassword: ctx.config.DATABASE_PASSWORD,
    applicationName: `${ctx.service.name}-${worker.replace('-worker.js', '')}`,
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
