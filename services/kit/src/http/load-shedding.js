// Load shedding: 503 with Retry-After while the event loop is late or busy, or memory is near its
// limit (@fastify/under-pressure). Registered in the scope of the service's routes only: health and
// metrics must answer under load.
//
// The plugin measures from its registration, so its first samples count the start-up's own work
// (compiling schemas, on a busy node a second or more) as event-loop delay and utilization: without a
// grace, a worker just ready would answer 503 to its first requests. It sheds once two whole sample
// windows lie after listen.
import fp from 'fastify-plugin'
import underPressure from '@fastify/under-pressure'
import { httpError } from './error-schemas.js'

const SAMPLE_MS = 1000 // how often it samples event-loop delay, utilization and memory
const SAID_EVERY_MS = 10_000 // one warn line an episode: which bound was passed, and by how much

export const loadShedding = fp(async function loadShedding (app, { config }) {
  let sheddingFrom = Infinity
  let said = -Infinity
  app.addHook('onListen', async () => { sheddingFrom = performance.now() + 2 * SAMPLE_MS })
  await app.register(underPressure, {
    maxEventLoopDelay: config.MAX_EVENT_LOOP_DELAY_MS,
    maxEventLoopUtilization: config.MAX_EVENT_LOOP_UTILIZATION,
    maxHeapUsedBytes: config.MAX_HEAP_USED_BYTES,
    maxRssBytes: config.MAX_RSS_BYTES,
    sampleInterval: SAMPLE_MS,
    pressureHandler: (request, reply, type, value) => {
      const now = performance.now()
      if (now < sheddingFrom) return // serve it
      if (now - said >= SAID_EVERY_MS) {
        said = now
        request.log.warn({ type, value }, `shedding load: ${type} at ${value} is past its bound`)
      }
      reply.header('retry-after', '1')
      return Promise.reject(httpError(503, 'service overloaded, retry shortly'))
    }
  })
}, { name: 'load-shedding' })
