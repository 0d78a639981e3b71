// The main thread of a service process: starts WORKERS worker threads that each run the Fastify app
// on the same port (SO_REUSEPORT: the kernel spreads connections), replaces a crashed worker,
// answers metrics scrapes with the sum of all workers, relays in-memory cache invalidations between
// workers, and shuts everything down on SIGTERM/SIGINT. With WORKERS=1 the one instance runs on the
// main thread instead: a thread of its own costs a second V8 heap and a second copy of every module,
// and buys only its replacement after a crash, which Kubernetes does for the pod (an uncaught error
// shuts the process down gracefully, exit 1). Decision 0001.
import { Worker } from 'node:worker_threads'
import { createServer } from 'node:net'
import closeWithGrace from 'close-with-grace'
import { createProcessMetrics, aggregate } from '../telemetry/metrics.js'
import { prettyLogs } from '../telemetry/logger.js'
import { createInstance } from './instance.js'
import { probeDatabase } from './database-probe.js'
import { channel, NO_ANSWER } from './channel.js'

const RESTARTS_ALLOWED = 5 // within RESTART_WINDOW_MS; past that the process exits and Kubernetes restarts the pod
const RESTART_WINDOW_MS = 60_000
const ASK_TIMEOUT_MS = 2000
// The kernel spreads a port's connections among its SO_REUSEPORT sockets on these systems only.
const REUSE_PORT_BALANCED = ['linux', 'freebsd', 'dragonfly', 'sunos', 'aix']

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
  const reusePort = REUSE_PORT_BALANCED.includes(process.platform)
  if (count > 1 && !reusePort) {
    log.warn(`running 1 worker instead of ${count}: ${process.platform} does not balance SO_REUSEPORT`)
    count = 1
  }
  // With SO_REUSEPORT a second process on the same port would not fail: it would silently take
  // half the connections. So the port is first claimed once without it, to fail loudly instead.
  try {
    await claimPort(config.HOST, config.PORT)
  } catch (err) {
    const why = err.code === 'EADDRINUSE' ? 'the port is in use' : err.message
    const message = `cannot listen on ${config.HOST}:${config.PORT}: ${why}`
    if (hosted) throw new Error(message, { cause: err })
    log.fatal(message)
    process.exit(1)
  }
  const processMetrics = createProcessMetrics()
  const database = probeDatabase(config, log, service.name)
  const workers = new Map() // id -> { worker, channel }
  let inline = null // with one worker: the instance on this thread (a promise while it starts)
  const pretty = prettyLogs(config.LOG_FORMAT)
  const restarts = []
  let closing = false

  // What a worker may ask of the main thread; `from` is its number.
  const handlers = (from) => ({
    // One scrape: every worker's registry as JSON, plus the process metrics, summed.
    scrape: async ({ format }) => {
      const each = await askAll('metrics')
      return aggregate([await processMetrics.getMetricsAsJSON(), ...each], format)
    },
    // A cache invalidation in memory mode reaches every other worker before the writer answers.
    invalidate: (args) => askAll('invalidate', args, from)
  })

  function spawn (id) {
    return new Promise((resolve, reject) => {
      const worker = new Worker(new URL('./worker-thread.js', import.meta.url), {
        workerData: { serviceUrl: service.url, id, reusePort, pretty, config, database: database.state }
      })
      workers.set(id, {
        worker,
        channel: channel(worker, { ...handlers(id), listening: ({ address }) => resolve(address) })
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

  // Asks every worker (but `except`) and resolves to their answers; a stuck worker is left out after
  // ASK_TIMEOUT_MS rather than stalling scrapes and writes.
  async function askAll (op, args, except) {
    if (inline) return except === 0 ? [] : [await (await inline).answers[op](args)]
    const asked = [...workers].filter(([id]) => id !== except)
    const answers = await Promise.all(asked.map(([, w]) => w.channel.request(op, args, ASK_TIMEOUT_MS)))
    return answers.filter((a) => a !== NO_ANSWER)
  }

  // The workers keep serving SHUTDOWN_DELAY_MS, then have SHUTDOWN_GRACE_MS to finish.
  async function close (signal) {
    closing = true
    database.stop()
    log.info({ signal }, 'shutting down: finishing in-flight requests')
    const codes = inline
      ? [await inline.then((instance) => instance.shutdown(), () => 0)]
      : await Promise.all([...workers.values()].map(({ worker, channel }) => new Promise((resolve) => {
          worker.once('exit', resolve)
          channel.request('shutdown')
        })))
    log.info('all workers closed')
    return codes
  }
  // Signals are handled from the start: a SIGTERM while workers are still starting is graceful too.
  if (!hosted) {
    const delay = config.SHUTDOWN_DELAY_MS + config.SHUTDOWN_GRACE_MS
    closeWithGrace({ delay, logger: { error: (m) => log.error(m) } }, async ({ signal, err }) => {
      if (err) log.error({ err }, 'main thread error, shutting down')
      // A worker that had to cut requests still busy after the grace exits 1, and so does the process.
      if ((await close(signal)).some((code) => code !== 0)) {
        throw new Error('requests were still running after SHUTDOWN_GRACE_MS and were cut')
      }
    })
  }

  let addresses
  try {
    if (count === 1) {
      const call = (op, args) => handlers(0)[op](args)
      inline = createInstance({ service, id: 0, reusePort, pretty, config, database: database.state, call })
      addresses = [await (await inline).listen()]
    } else {
      addresses = await Promise.all(Array.from({ length: count }, (_, i) => spawn(i)))
    }
  } catch (err) {
    if (closing) return { close } // stopped while starting: the shutdown above finishes the job
    closing = true
    database.stop()
    await Promise.all([...workers.values()].map(({ worker }) => worker.terminate()))
    await inline?.then((instance) => instance.close(), () => {})
    if (hosted) throw new Error(`could not start workers: ${err.message}`, { cause: err })
    log.fatal({ err: err.message }, 'could not start workers')
    process.exit(1)
  }
  const threads = count === 1 ? 'one worker, on the main thread' : `${count} worker threads`
  const fields = { workers: count, address: addresses[0], nearCacheBytes: config.CACHE_NEAR_MAX_BYTES }
  log.info(fields, `listening on ${addresses[0]} with ${threads}`)
  return { addresses, close }
}
