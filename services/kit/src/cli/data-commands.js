// The data commands of a service with a data set (services/list.js, `data`): `generate` writes its
// CSV files, `load` copies them into PostgreSQL, and with `direct`, `seed` generates straight into it.
// Each runs the service's etl module in a worker thread with a capped heap (inCappedThread).
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { once } from 'node:events'
import { createPool } from '../data/pg.js'
import { LOAD_DEFAULTS } from '../etl/load.js'
import { UsageError, wholeNumber, numberIn } from './args.js'
import { CommandError, migrateCommand } from './migrate-command.js'

const HEAP_MB = 128 // generate and load threads
const YOUNG_MB = 24 // the image's --max-semi-space-size=4 (services/Dockerfile) wins over it there: 12
// The data commands' thread entries: files a Worker runs (with a capped heap), not imports.
const THREADS = {
  generate: new URL('../etl/generate-worker.js', import.meta.url),
  load: new URL('../etl/load-worker.js', import.meta.url),
  seed: new URL('../etl/seed-worker.js', import.meta.url)
}

/**
 * The commands of `service.data` (its entry in services/list.js), run on `service.etl`, a module that
 * exports `generate({ out, [option]: n, seed })` and `load({ db, dir, rejectsFile, progress })`, and
 * with `direct` also `seed({ connect, [option]: n, seed, streams, progress })`.
 *   option: the name of the size option (`products`, `menus`…); defaultCount: its default;
 *   files: what generate writes (for --help); table: the table whose rows mean "the data set is
 *   there" (for --if-empty); cachePrefix: the cached answers a new data set makes old
 */
export function dataCommands (service) {
  const { option, defaultCount, files, table, direct = false } = service.data
  const data = { name: service.name, etlModule: service.etl, cachePrefix: service.cachePrefix, option, table }
  return {
    generate: generateCommand({ ...data, defaultCount, files }),
    load: loadCommand(data),
    ...(direct && { seed: seedCommand({ ...data, defaultCount }) })
  }
}

// Options load and seed share: a Job started with its database waits for it, and a seed Job run
// again (an upgrade re-creates it) leaves the data that is there alone.
const replaceOptions = (table) => ({
  wait: {
    type: 'string',
    value: 'SECONDS',
    default: '0',
    help: 'while PostgreSQL is unreachable, retry this long; also the longest wait for each lock'
  },
  'if-empty': {
    type: 'boolean',
    default: false,
    help: `only when the ${table} table is empty: a data set that is there is left alone`
  },
  'swap-wait': {
    type: 'string',
    value: 'SECONDS',
    default: String(LOAD_DEFAULTS.swapWaitSeconds),
    help: 'how long the swap keeps trying to take its locks (refused after)'
  }
})

function generateCommand ({ name, etlModule, option, defaultCount, files }) {
  return {
    summary: `write ${files}, deterministic for a seed`,
    config: false,
    options: {
      out: { type: 'string', value: 'DIR', help: 'folder to write the files into (required)' },
      [option]: { type: 'string', value: 'N', default: String(defaultCount), help: `how many ${option}` },
      seed: { type: 'string', value: 'N', default: '1', help: 'random seed: the same seed writes the same files' }
    },
    examples: [`node services/${name}/src/cli.js generate --out /tmp/data --${option} 1000`],
    async run (values, { log }) {
      if (!values.out) throw new UsageError('--out DIR is required')
      const manifest = await inCappedThread('generate', {
        etlModule: String(etlModule),
        options: { out: values.out, [option]: wholeNumber(values, option), seed: wholeNumber(values, 'seed') }
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
  if (crash?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
    throw new CommandError(`out of memory: the ${kind} thread's heap is capped at ${HEAP_MB} MB`)
  }
  if (crash) throw crash
  if (code !== 0) throw new Error(`the ${kind} thread failed (worker exit ${code})`)
  return message.result
}

/**
 * The `seed` command: migrate, generate the data set straight into PostgreSQL over --streams
 * connections (no files: a 10M-row set needs no scratch volume), then clear the cached answers.
 */
function seedCommand ({ name, etlModule, cachePrefix, option, defaultCount, table }) {
  return {
    summary: 'generate the data straight into PostgreSQL (binary COPY, atomic swap), then clear the cache',
    options: {
      [option]: { type: 'string', value: 'N', default: String(defaultCount), help: `how many ${option}` },
      seed: { type: 'string', value: 'N', default: '1', help: 'random seed: the same seed makes the same rows' },
      streams: {
        type: 'string',
        value: 'K',
        default: String(availableParallelism()),
        help: 'COPY connections at once (default: one per CPU)'
      },
      ...replaceOptions(table)
    },
    examples: [`DATABASE_URL=postgres://localhost/suite node services/${name}/src/cli.js seed --${option} 100000`],
    async run (values, ctx) {
      const options = {
        [option]: wholeNumber(values, option),
        seed: wholeNumber(values, 'seed'),
        streams: wholeNumber(values, 'streams', { min: 1 }),
        swapWaitSeconds: wholeNumber(values, 'swap-wait')
      }
      await replaceData(ctx, { kind: 'seed', etlModule, cachePrefix, table, values, data: { options } })
    }
  }
}

/**
 * The `load` command: migrate, run the etlModule's `load`, then clear the cached answers under
 * `cachePrefix`. A load that is not a plausible replacement (see loadTables) is refused: one line,
 * exit 1, the live tables and the cache untouched.
 */
function loadCommand ({ name, etlModule, cachePrefix, table }) {
  const d = LOAD_DEFAULTS
  return {
    summary: 'load the CSVs of --dir into PostgreSQL (COPY, atomic swap), then clear the cache; a load that is ' +
      'not a plausible replacement is refused (exit 1, nothing changed)',
    options: {
      dir: { type: 'string', value: 'DIR', help: 'folder of the CSV files (required)' },
      rejects: {
        type: 'string',
        value: 'FILE',
        help: 'where the rejected rows go, with line and reason (default: DIR/rejects.csv)'
      },
      ...replaceOptions(table),
      'min-rows': {
        type: 'string',
        value: 'N',
        default: String(d.minRows),
        help: 'refuse the load when a file loads fewer rows'
      },
      'max-reject-ratio': {
        type: 'string',
        value: 'SHARE',
        default: String(d.maxRejectRatio),
        help: 'refuse the load when a file rejects more of the rows it read (and more than a few)'
      },
      'max-record-length': {
        type: 'string',
        value: 'CHARS',
        default: String(d.maxRecord),
        help: 'a longer CSV record is refused'
      }
    },
    examples: [`DATABASE_URL=postgres://localhost/suite node services/${name}/src/cli.js load --dir /tmp/data`],
    async run (values, ctx) {
      const { dir, rejects } = values
      if (!dir) throw new UsageError('--dir DIR is required')
      const limits = {
        minRows: wholeNumber(values, 'min-rows'),
        maxRejectRatio: numberIn(values, 'max-reject-ratio', { min: 0, max: 1 }),
        maxRecord: wholeNumber(values, 'max-record-length', { min: 1 }),
        swapWaitSeconds: wholeNumber(values, 'swap-wait')
      }
      const data = { dir, rejectsFile: rejects ?? `${dir}/rejects.csv`, limits }
      await replaceData(ctx, { kind: 'load', etlModule, cachePrefix, table, values, data })
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

// After new data is swapped in, the cached answers under `prefix` are old: delete them. The cache and
// the metrics are imported here only: the other commands do not carry them.
async function clearCache (ctx, prefix) {
  const [{ createCache }, { createMetrics }] = await Promise.all([
    import('../cache/index.js'),
    import('../telemetry/metrics.js')
  ])
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
