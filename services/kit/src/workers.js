// The main thread of a service process: starts WORKERS worker threads that each run the Fastify app
// on the same port (SO_REUSEPORT: the kernel spreads connections), replaces a crashed worker,
// answers metrics scrapes with the sum of all workers, relays in-memory cache invalidations between
// workers, and shuts everything down on SIGTERM/SIGINT. With WORKERS=1 the one instance runs on the
// main thread instead: a thread of its own cost a second V8 heap and a second copy of every module
// (~30 MB of a one-worker pod's RSS under load, docs/decisions: one worker on the main thread) and bought only its replacement
// after a crash, which Kubernetes does for the pod (an uncaught error shuts the process down
// gracefully, exit 1).
import { Worker } from 'node:worker_threads'
import { createServer } from 'node:net'
import closeWithGrace from 'close-with-grace'
import { createProcessMetrics, aggregate } from './metrics.js'
import { createPool } from './pg.js'
import { createInstance } from './instance.js'
import { prettyLogs } from './logger.js'

const RESTARTS_ALLOWED = 5 // within RESTART_WINDOW_MS; past that the process exits and Kubernetes restarts the pod
const RESTART_WINDOW_MS = 60_000
const ASK_TIMEOUT_MS = 2000
const PROBE_INTERVAL_MS = 1000

/** SO_REUSEPORT for `listen` came with Node 22.12 / 23.1, on Linux and a few BSDs. */
function reusePortSupport () {
  const [major, minor] = process.versions.node.split('.').map(Number)
  if (major < 22 || (major === 22 && minor < 12) || (major === 23 && minor < 1)) return `Node ${process.version} has no reusePort`
  if (!['linux', 'freebsd', 'dragonfly', 'sunos', 'aix'].includes(process.platform)) return `${process.platform} does not balance SO_REUSEPORT`
  return null
}

/**
 * PostgreSQL as this pod sees it, for /readyz: `SELECT 1` every PROBE_INTERVAL_MS on a connection of
 * its own (one per process, not from the request pools, so it never waits behind requests nor takes a
 * connection from them), bounded by the same connect and query timeouts. The result is shared with
 * every worker through `state` (0 unknown, 1 ok, 2 down), read without a message or a wait.
 */
function probeDatabase (config, log, name) {
  const state = new Int32Array(new SharedArrayBuffer(4))
  // allowExitOnIdle: the idle probe connection never holds the process open at exit.
  const pool = createPool({ ...config, PG_POOL_MAX: 1, PG_POOL_MIN: 0 }, log, `${name}-probe`)
  pool.options.allowExitOnIdle = true
  let timer
  let stopped = false
  const check = async () => {
    const up = await pool.query('SELECT 1').then(() => true, () => false)
    Atomics.store(state, 0, up ? 1 : 2)
    if (stopped) return
    timer = setTimeout(check, PROBE_INTERVAL_MS)
    timer.unref()
  }
  check()
  return { state, stop () { stopped = true; clearTimeout(timer); pool.end().catch(() => {}) } }
}

function claimPort (host, port) {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen({ host, port, exclusive: true }, () => server.close(resolve))
  })
}

/**
 * @param {object} service  the service definition; each worker imports it again from `service.url`
 * @param {object} config  validated configuration
 * @param {{ hosted?: boolean, exit?: Function }} [options]  hosted: one of several services in a
 *   process that is not its own (npm start's launcher): no signal handling, and a failure to start
 *   is thrown; the caller stops it with the returned close(). exit(code): how it ends the process
 *   after too many worker crashes.
 * @returns {Promise<{ addresses, close: () => Promise<number[]> }>}  close: the graceful
 *   shutdown, resolving to the workers' exit codes (1: a worker cut requests still running)
 */
export async function runWorkers (service, config, log, { hosted = false, exit = (code) => process.exit(code) } = {}) {
  let count = config.WORKERS
  const unsupported = reusePortSupport()
  if (count > 1 && unsupported) {
    log.warn(`running 1 worker instead of ${count}: ${unsupported}`)
    count = 1
  }
  // With SO_REUSEPORT a second process on the same port would not fail: it would silently take
  // half the connections. So the port is first claimed once without it, to fail loudly instead.
  try {
    await claimPort(config.HOST, config.PORT)
  } catch (err) {
    const message = `cannot listen on ${config.HOST}:${config.PORT}: ${err.code === 'EADDRINUSE' ? 'the port is in use' : err.message}`
    if (hosted) throw new Error(message, { cause: err })
    log.fatal(message)
    process.exit(1)
  }
  const processMetrics = createProcessMetrics()
  const database = probeDatabase(config, log, service.name)
  const workers = new Map() // id -> Worker
  let inline = null // with one worker: the instance on this thread (a promise while it starts)
  const pretty = prettyLogs(config.LOG_FORMAT)
  const asks = new Map() // ask id -> { answers, waiting, resolve, timer }
  const restarts = []
  let closing = false
  let askSeq = 0

  // What a worker can ask of the main thread; each answer goes back as { type: 'reply', id, result }.
  const calls = {
    // One scrape: every worker's registry as JSON, plus the process metrics, summed.
    scrape: async ({ format }) => aggregate([await processMetrics.getMetricsAsJSON(), ...await askAll({ op: 'metrics' })], format),
    // A cache invalidation in memory mode reaches every other worker before the writer answers.
    invalidate: ({ key, version }, from) => askAll({ op: 'invalidate', key, version }, from)
  }

  function spawn (id) {
    return new Promise((resolve, reject) => {
      const worker = new Worker(new URL('./worker.js', import.meta.url), {
        workerData: { serviceUrl: service.url, id, reusePort: !unsupported, pretty, config, database: database.state }
      })
      workers.set(id, worker)
      worker.on('message', async (msg) => {
        if (msg.type === 'listening') resolve(msg.address)
        else if (msg.type === 'call') worker.postMessage({ type: 'reply', id: msg.id, result: await calls[msg.op](msg, id) })
        else if (msg.type === 'answer') answered(msg)
      })
      worker.on('error', (err) => log.error({ err, worker: id }, 'worker crashed'))
      worker.on('exit', (code) => {
        workers.delete(id)
        reject(new Error(`worker ${id} exited with ${code} before listening`))
        if (closing) return
        const now = Date.now()
        restarts.push(now)
        while (restarts[0] < now - RESTART_WINDOW_MS) restarts.shift()
        if (restarts.length > RESTARTS_ALLOWED) {
          log.fatal(`${restarts.length} worker crashes within ${RESTART_WINDOW_MS / 1000} s, exiting`)
          return exit(1)
        }
        log.error({ worker: id, code }, 'worker exited, starting a new one')
        spawn(id).catch((err) => log.error({ err: err.message }, 'replacement worker failed'))
      })
    })
  }

  // Sends `message` to every worker (but `except`) and resolves to their answers; a stuck worker
  // is left out after ASK_TIMEOUT_MS rather than stalling scrapes and writes.
  async function askAll (message, except) {
    if (inline) return except === 0 ? [] : [await (await inline).answers[message.op](message)]
    const targets = [...workers].filter(([id]) => id !== except).map(([, w]) => w)
    if (!targets.length) return []
    const id = ++askSeq
    return new Promise((resolve) => {
      const entry = { answers: [], waiting: targets.length, resolve }
      entry.timer = setTimeout(() => settle(id), ASK_TIMEOUT_MS)
      asks.set(id, entry)
      for (const worker of targets) worker.postMessage({ type: 'ask', id, ...message })
    })
  }
  function answered ({ id, result }) {
    const entry = asks.get(id)
    if (!entry) return
    entry.answers.push(result)
    if (--entry.waiting === 0) settle(id)
  }
  function settle (id) {
    const entry = asks.get(id)
    if (!entry) return
    asks.delete(id)
    clearTimeout(entry.timer)
    entry.resolve(entry.answers)
  }

  // The workers keep serving SHUTDOWN_DELAY_MS, then have SHUTDOWN_GRACE_MS to finish.
  async function close (signal) {
    closing = true
    database.stop()
    log.info({ signal }, 'shutting down: finishing in-flight requests')
    const codes = inline
      ? [await inline.then((instance) => instance.shutdown(), () => 0)]
      : await Promise.all([...workers.values()].map((worker) => new Promise((resolve) => {
          worker.once('exit', resolve)
          worker.postMessage({ type: 'shutdown' })
        })))
    log.info('all workers closed')
    return codes
  }
  // Signals are handled from the start: a SIGTERM while workers are still starting is graceful too.
  if (!hosted) {
    closeWithGrace({ delay: config.SHUTDOWN_DELAY_MS + config.SHUTDOWN_GRACE_MS, logger: { error: (m) => log.error(m) } }, async ({ signal, err }) => {
      if (err) log.error({ err }, 'main thread error, shutting down')
      // A worker that had to cut requests still busy after the grace exits 1, and so does the process.
      if ((await close(signal)).some((code) => code !== 0)) throw new Error('requests were still running after SHUTDOWN_GRACE_MS and were cut')
    })
  }

  let addresses
  try {
    if (count === 1) {
      inline = createInstance({ service, id: 0, reusePort: !unsupported, pretty, config, database: database.state, call: (op, args) => calls[op](args, 0) })
      addresses = [await (await inline).listen()]
    } else {
      addresses = await Promise.all(Array.from({ length: count }, (_, i) => spawn(i)))
    }
  } catch (err) {
    if (closing) return { close } // stopped while starting: the shutdown above finishes the job
    closing = true
    database.stop()
    await Promise.all([...workers.values()].map((w) => w.terminate()))
    await inline?.then((instance) => instance.close(), () => {})
    if (hosted) throw new Error(`could not start workers: ${err.message}`, { cause: err })
    log.fatal({ err: err.message }, 'could not start workers')
    process.exit(1)
  }
  log.info({ workers: count, address: addresses[0], nearCacheBytes: config.CACHE_NEAR_MAX_BYTES }, `listening on ${addresses[0]} with ${count === 1 ? 'one worker, on the main thread' : `${count} worker threads`}`)
  return { addresses, close }
}
