// The main thread of a service process: starts WORKERS worker threads that each run the Fastify app
// on the same port (SO_REUSEPORT: the kernel spreads connections), replaces a crashed worker,
// answers metrics scrapes with the sum of all workers, and shuts everything down on SIGTERM/SIGINT.
import { Worker } from 'node:worker_threads'
import closeWithGrace from 'close-with-grace'
import { createProcessMetrics, aggregate } from './metrics.js'

const RESTARTS_ALLOWED = 5 // within RESTART_WINDOW_MS; past that the process exits and Kubernetes restarts the pod
const RESTART_WINDOW_MS = 60_000
const SCRAPE_TIMEOUT_MS = 2000

/** SO_REUSEPORT for `listen` came with Node 22.12 / 23.1, on Linux and a few BSDs. */
export function reusePortSupport () {
  const [major, minor] = process.versions.node.split('.').map(Number)
  if (major < 22 || (major === 22 && minor < 12) || (major === 23 && minor < 1)) return `Node ${process.version} has no reusePort`
  if (!['linux', 'freebsd', 'dragonfly', 'sunos', 'aix'].includes(process.platform)) return `${process.platform} does not balance SO_REUSEPORT`
  return null
}

/**
 * @param {URL|string} serviceUrl  module whose default export is the service definition
 * @param {object} config  validated configuration
 */
export async function runWorkers (serviceUrl, config, log) {
  let count = config.WORKERS
  const unsupported = reusePortSupport()
  if (count > 1 && unsupported) {
    log.warn(`running 1 worker instead of ${count}: ${unsupported}`)
    count = 1
  }
  const processMetrics = createProcessMetrics()
  const workers = new Map() // id -> Worker
  const scrapes = new Map() // scrape id -> { results, waiting, resolve }
  const restarts = []
  let closing = false
  let scrapeSeq = 0

  function spawn (id) {
    return new Promise((resolve, reject) => {
      const worker = new Worker(new URL('./worker.js', import.meta.url), {
        workerData: { serviceUrl: String(serviceUrl), id, reusePort: !unsupported, pretty: Boolean(process.stdout.isTTY) }
      })
      workers.set(id, worker)
      worker.on('message', (msg) => {
        if (msg.type === 'listening') resolve(msg.address)
        else if (msg.type === 'scrape') scrape().then((text) => worker.postMessage({ type: 'scrape-result', id: msg.id, text }))
        else if (msg.type === 'collected') collected(msg)
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
          process.exit(1)
        }
        log.error({ worker: id, code }, 'worker exited, starting a new one')
        spawn(id).catch((err) => log.error({ err: err.message }, 'replacement worker failed'))
      })
    })
  }

  // One scrape: ask every worker for its registry as JSON, add the process metrics, sum.
  function scrape () {
    const id = ++scrapeSeq
    return new Promise((resolve) => {
      const entry = { results: [], waiting: workers.size, resolve }
      scrapes.set(id, entry)
      for (const worker of workers.values()) worker.postMessage({ type: 'collect', id })
      entry.timer = setTimeout(() => finish(id), SCRAPE_TIMEOUT_MS) // a stuck worker must not stall scrapes
    })
  }
  function collected ({ id, json }) {
    const entry = scrapes.get(id)
    if (!entry) return
    entry.results.push(json)
    if (--entry.waiting === 0) finish(id)
  }
  async function finish (id) {
    const entry = scrapes.get(id)
    if (!entry) return
    scrapes.delete(id)
    clearTimeout(entry.timer)
    entry.resolve(await aggregate([await processMetrics.getMetricsAsJSON(), ...entry.results]))
  }

  let addresses
  try {
    addresses = await Promise.all(Array.from({ length: count }, (_, i) => spawn(i)))
  } catch (err) {
    closing = true
    log.fatal({ err: err.message }, 'could not start workers')
    await Promise.all([...workers.values()].map((w) => w.terminate()))
    process.exit(1)
  }
  log.info({ workers: count, address: addresses[0] }, `listening on ${addresses[0]} with ${count} worker thread(s)`)

  closeWithGrace({ delay: config.SHUTDOWN_GRACE_MS, logger: { error: (m) => log.error(m) } }, async ({ signal, err }) => {
    closing = true
    if (err) log.error({ err }, 'main thread error, shutting down')
    log.info({ signal }, 'shutting down: finishing in-flight requests')
    await Promise.all([...workers.values()].map((worker) => new Promise((resolve) => {
      worker.once('exit', resolve)
      worker.postMessage({ type: 'shutdown' })
    })))
    log.info('all workers closed')
  })
  return { addresses, workers }
}
